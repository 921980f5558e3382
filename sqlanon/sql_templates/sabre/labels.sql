-- Each class's released QI values and rows: per attribute, its cells' common value at the
-- lowest level of the hierarchy where they all share one (:labels, from which levels they
-- share, :shared, and one of its cells), and that level (:levels); the cells from :segments.
WITH seg AS (:segments)
SELECT x.cls, :labels, :levels, x.n
FROM (
  SELECT s.cls, MIN(s.cell) AS cell, :shared, SUM(s.width) AS n
  FROM seg AS s
  JOIN :codes AS o ON o.cell = s.cell
  GROUP BY s.cls
) AS x
JOIN :cells AS f ON f.cell = x.cell
