-- The other step of a refinement round (kAnonyMeans' merge, Stoldt 2019): a group is dissolved
-- where moving each of its rows to the nearest other centroid (:near, nearest.sql) lowers the
-- SSE. Exactly: the rows S a group b receives add Σ_S d(x, c_b) − |S|² / (n_b + |S|) · |c_S − c_b|²
-- (:shift is |c_S − c_b|²), and the dissolved group's own SSE goes. The groups that receive rows
-- grow, never shrink, so every group keeps k rows. That the gains add up, a group is dissolved
-- only where it is the best of the dissolvable groups at each of its receivers, none of its
-- receivers is dissolvable, and it receives from none. The answer: every row of a dissolved
-- group, with its new group.
WITH sent AS (
  SELECT r.g, r.dest, COUNT(*) AS s, SUM(r.d) AS d, MAX(c.n) AS nb, :shift AS shift
  FROM :near AS r
  JOIN :work AS w ON w.id = r.id
  JOIN :cent AS c ON c.g = r.dest
  GROUP BY r.g, r.dest
), added AS (
  SELECT g, SUM(d - CAST(s * s AS DOUBLE) / (nb + s) * shift) AS added FROM sent GROUP BY g
), candidates AS (
  SELECT a.g, o.own - a.added AS gain
  FROM added AS a
  JOIN (SELECT g, SUM(own) AS own, COUNT(*) AS n FROM :near GROUP BY g) AS o ON o.g = a.g
  JOIN :cent AS s ON s.g = a.g AND s.n = o.n
  WHERE o.own - a.added > :eps
), ranked AS (
  SELECT t.g, t.dest, ROW_NUMBER() OVER (PARTITION BY t.dest ORDER BY c.gain DESC, t.g) AS r
  FROM sent AS t
  JOIN candidates AS c ON c.g = t.g
), chosen AS (
  SELECT c.g FROM candidates AS c
  WHERE NOT EXISTS (SELECT 1 FROM ranked AS x WHERE x.g = c.g AND x.r > 1)
    AND NOT EXISTS (SELECT 1 FROM ranked AS x WHERE x.dest = c.g)
    AND NOT EXISTS (SELECT 1 FROM sent AS t JOIN candidates AS y ON y.g = t.dest WHERE t.g = c.g)
)
SELECT r.id, r.dest AS g
FROM :near AS r
JOIN chosen AS c ON c.g = r.g
