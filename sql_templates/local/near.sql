-- A round of joins under t-closeness, first step: each cell left after the last node with the
-- :near classes whose labels it changes least (local/join.sql's order, rank rk) among those that
-- stay α-compliant with it; local/join_t.sql judges t on these few, not on every class.
SELECT cell, n, p, sv, pid, cn, rk
FROM (
  SELECT r.cell, r.n, r.p, r.sv, x.pid, x.n AS cn,
         ROW_NUMBER() OVER (PARTITION BY r.cell ORDER BY :cost * (x.n + r.n), x.n, x.pid) AS rk
  FROM :rem AS r
  CROSS JOIN :shared AS x
  WHERE (x.pr + r.n * r.p) * :den <= :num * (x.n + r.n)
) AS c
WHERE rk <= :near
