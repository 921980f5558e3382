-- Rows taken from each cell by the allowed parts: all unprotected rows of the class, and the
-- protected rows of each value up to the cap, spread over the value's cells in cell order.
SELECT cell, CASE WHEN before_cell >= x THEN 0
                  WHEN n < x - before_cell THEN n
                  ELSE x - before_cell END AS take
FROM (
  SELECT s.cell, s.n,
         CASE WHEN s.p = 0 THEN s.n ELSE pv.x END AS x,
         CASE WHEN s.p = 0 THEN 0 ELSE
           SUM(s.n) OVER (PARTITION BY s.cls, s.sv ORDER BY s.cell
                          ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - s.n END AS before_cell
  FROM :stat AS s
  JOIN :parts AS p ON p.cls = s.cls
  LEFT JOIN :partvals AS pv ON pv.cls = s.cls AND pv.sv = s.sv
  WHERE p.rk < :limit_rank
) AS t
