-- One column group of zipped.sql: the bucket's values of the group (:x, one column or a row of
-- its columns) in the order of the group's key (:r).
SELECT UNNEST(ARRAY_AGG(:x ORDER BY :r))
