-- The buckets of a sliced release: their number, and Σ size² (every row is indistinguishable
-- within its bucket: the discernibility of slicing).
SELECT COUNT(*) AS buckets, SUM(sz * sz) AS dm, MIN(sz) AS smallest, MAX(sz) AS largest
FROM (SELECT COUNT(*) AS sz FROM :released GROUP BY :bucket) AS b
