-- A random sample of one column's values, and how many of them match each identifier pattern:
-- the :matches list of SUM(CASE WHEN <pattern> THEN 1 ELSE 0 END). Only the counts leave.
SELECT COUNT(v) AS sampled, :matches
FROM (
  SELECT :value AS v
  FROM :rows AS r
  WHERE :value IS NOT NULL
  ORDER BY RANDOM()
  LIMIT :size
) AS s
