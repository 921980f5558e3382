-- The candidate classes' sizes and largest protected count (maxp), then the criteria's aggregates.
SELECT :aggregates
FROM (
  SELECT cls, SUM(cnt) AS size, MAX(CASE WHEN p = 1 THEN cnt ELSE 0 END) AS maxp
  FROM :counts
  GROUP BY cls
) AS classes
