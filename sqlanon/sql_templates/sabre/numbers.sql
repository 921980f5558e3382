-- The class numbers 0 … :count - 1, taken from the rows (there are more rows than classes).
SELECT j
FROM (SELECT ROW_NUMBER() OVER () - 1 AS j FROM :src) AS x
WHERE j < :count
