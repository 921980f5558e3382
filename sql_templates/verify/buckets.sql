-- The buckets of a sliced release (verify/bucket_stats.sql): their number, Σ size² (every row
-- is indistinguishable within its bucket: the discernibility of slicing), the smallest and
-- largest, the lowest and highest l, and the sets that break the requested l.
SELECT COUNT(*) AS buckets, SUM(n * n) AS dm, MIN(n) AS smallest, MAX(n) AS largest,
       MIN(l) AS l_min, MAX(l) AS l_max, SUM(bad) AS bad
FROM :stats
