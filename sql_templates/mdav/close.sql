-- Each group's nearest other groups by centroid: the partners a refinement round pairs it with
-- (refine.sql).
SELECT a, b
FROM (
  SELECT a.g AS a, b.g AS b, ROW_NUMBER() OVER (PARTITION BY a.g ORDER BY :cdist, b.g) AS rk
  FROM :cent AS a
  CROSS JOIN :cent AS b
  WHERE a.g <> b.g
) AS t
WHERE rk <= :neighbours
