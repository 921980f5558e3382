-- The release plan: for each cell, the row ranges released at each set of levels, with the
-- released QI values of that range (label_<qi>). whole = 1 when one range is the whole cell,
-- so its rows need no numbering.
SELECT c.k, r.lo, r.hi, CASE WHEN r.lo = 1 AND r.hi = c.n THEN 1 ELSE 0 END AS whole, :labels
FROM (
  SELECT cell, :levels,
         SUM(n) OVER (PARTITION BY cell ORDER BY step ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - n + 1 AS lo,
         SUM(n) OVER (PARTITION BY cell ORDER BY step ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS hi
  FROM :assign
) AS r
JOIN :cells AS c ON c.cell = r.cell
