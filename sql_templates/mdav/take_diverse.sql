-- One V-MDAV group (John's thesis, Figure 18, with k): the unassigned row x farthest from the
-- centroid; then, nearest first, the first row of each sensitive value x does not have, until
-- the group holds l values (tier 0); then the nearest other rows until it holds k (tier 1).
UPDATE :work AS u SET g = t.seed
FROM (
  SELECT c.id, c.seed
  FROM (
    SELECT b.id, b.seed, b.me, b.dist,
           CASE WHEN b.rep = 1 AND ROW_NUMBER() OVER (PARTITION BY b.rep ORDER BY b.dist, b.id) < :l
                THEN 0 ELSE 1 END AS tier
    FROM (
      SELECT w.id, x.id AS seed, :dist AS dist,
             CASE WHEN w.id = x.id THEN 1 ELSE 0 END AS me,
             CASE WHEN w.sv <> x.sv AND ROW_NUMBER() OVER (PARTITION BY w.sv ORDER BY :dist, w.id) = 1
                  THEN 1 ELSE 0 END AS rep
      FROM :work AS w
      CROSS JOIN (SELECT * FROM :work WHERE g = 0 ORDER BY d0 DESC, id LIMIT 1) AS x
      WHERE w.g = 0
    ) AS b
  ) AS c
  ORDER BY c.me DESC, c.tier, c.dist, c.id
  LIMIT :size
) AS t
WHERE u.id = t.id
