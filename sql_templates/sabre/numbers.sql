-- The class numbers 0 … :count - 1, one per row of the first :count rows (there are more rows
-- than classes): the scan stops there.
SELECT ROW_NUMBER() OVER () - 1 AS j
FROM (SELECT 1 AS one FROM :src LIMIT :count) AS x
