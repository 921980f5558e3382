-- The release plan: for each cell, the row ranges released at each round, with the released
-- QI values of that round's levels (:levels, label_<qi>). A cell's ranges are its share of the
-- intervals that :pos lists for its block of the first round (:cls at the first round's levels,
-- :first); the cells of a block line up in cell order (before: the rows of the cells ahead).
-- whole = 1 when one range is the whole cell, so its rows need no numbering; sv: the cell's
-- sensitive value (release_cells.sql). Rows in no range are suppressed.
SELECT c.k, c.sv, x.lo, x.hi, CASE WHEN x.lo = 1 AND x.hi = c.n THEN 1 ELSE 0 END AS whole, :labels
FROM (
  SELECT q.cell, GREATEST(p.lo - q.before, 0) + 1 AS lo, LEAST(p.hi - q.before, q.n) AS hi, :levels
  FROM (
    SELECT o.cell, o.n, o.cls, o.sv,
           SUM(o.n) OVER (PARTITION BY o.cls, o.sv ORDER BY o.cell
                          ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - o.n AS before
    FROM (
      SELECT c.cell, c.n, c.sv, :cls AS cls
      FROM :codes AS c
      CROSS JOIN :first AS lv
    ) AS o
  ) AS q
  JOIN :pos AS p ON p.cls = q.cls AND p.sv = q.sv
  WHERE GREATEST(p.lo - q.before, 0) < LEAST(p.hi - q.before, q.n)
) AS x
JOIN :cells AS c ON c.cell = x.cell
