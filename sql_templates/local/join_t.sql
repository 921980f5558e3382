-- A round of joins under t-closeness, second step: each cell left over picks, among the classes
-- it keeps α-compliant and within t (those local/spread.sql lists for its size and value), the
-- one whose labels it changes least (the order of local/join.sql), and carries the joined
-- class's distance d.
SELECT cell, pid, n, p, sv, d
FROM (
  SELECT y.*, ROW_NUMBER() OVER (PARTITION BY y.cell ORDER BY y.price, y.cn, y.pid) AS rk
  FROM (
    SELECT r.cell, r.n, r.p, r.sv, x.pid, x.n AS cn, a.d, :cost * (x.n + r.n) AS price
    FROM :rem AS r
    JOIN :spread AS a ON a.n = r.n AND a.sv = r.sv
    JOIN :shared AS x ON x.pid = a.pid
    WHERE (x.pr + r.n * r.p) * :den <= :num * (x.n + r.n)
  ) AS y
) AS c
WHERE rk = 1
