-- One column of zipped.sql: the bucket's values in the order of their group's key (:r); ties
-- of a random key are broken by the row's place, the same for every column of the group.
SELECT UNNEST(ARRAY_AGG(:x ORDER BY :r, _sa_rank))
