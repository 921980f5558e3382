-- The cells left after the last node (fewer than k rows) each join the class whose labels they
-- change least: the lowest sum of the levels (over each hierarchy's height) at which the class
-- and the cell share a value (:cost), then the smallest class. A class only grows, so it keeps
-- k rows.
SELECT cell, pid
FROM (
  SELECT r.cell, x.pid, ROW_NUMBER() OVER (PARTITION BY r.cell ORDER BY :cost, x.n, x.pid) AS rk
  FROM :rem AS r
  CROSS JOIN :shared AS x
) AS c
WHERE rk = 1
