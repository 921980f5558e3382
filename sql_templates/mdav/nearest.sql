-- Each row's squared distance from its own group's centroid (own) and from the nearest other
-- centroid (d, of group dest; the lowest group on a tie), for the dissolution step of a
-- refinement round (dissolve.sql). All centroids are candidates: a row far from its own (an
-- outlier's group) may lie nearest to a centroid far from its group's. Only where :gate holds
-- (a round that dissolves), else no row: the cross join is the costliest step of a round.
WITH x AS (
  SELECT w.id, w.g, c.g AS dest, :dist AS d
  FROM :work AS w
  CROSS JOIN :cent AS c
  WHERE c.g <> w.g AND :gate
)
SELECT x.id, x.g, MIN(x.dest) AS dest, x.d, MAX(:own) AS own
FROM x
JOIN (SELECT id, MIN(d) AS d FROM x GROUP BY id) AS m ON m.id = x.id AND m.d = x.d
JOIN :work AS w ON w.id = x.id
JOIN :cent AS o ON o.g = x.g
GROUP BY x.id, x.g, x.d
