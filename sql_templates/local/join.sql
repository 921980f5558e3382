-- A round of joins: each cell left after the last node picks the class whose labels it changes
-- least, among those that stay α-compliant with it (x.pr protected rows of x.n, α = :num/:den):
-- the lowest sum of the levels (over each hierarchy's height) at which class and cell share a
-- value (:cost), times the rows of the class joined, then the smallest class. A class only
-- grows, so it keeps k rows.
SELECT cell, pid, n, p
FROM (
  SELECT r.cell, r.n, r.p, x.pid,
         ROW_NUMBER() OVER (PARTITION BY r.cell ORDER BY :cost * (x.n + r.n), x.n, x.pid) AS rk
  FROM :rem AS r
  CROSS JOIN :shared AS x
  WHERE (x.pr + r.n * r.p) * :den <= :num * (x.n + r.n)
) AS c
WHERE rk = 1
