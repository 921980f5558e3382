-- Each class's released QI values and rows: per attribute, its cells' common value at the
-- lowest level of the hierarchy where they all share one (:labels, from which levels they
-- share, :shared, over the codes its pieces carry, and one of its cells), and that level
-- (:levels); the cells from :pieces.
WITH seg AS (:pieces)
SELECT x.cls, :labels, :levels, x.n
FROM (
  SELECT o.cls, MIN(o.cell) AS cell, :shared, SUM(o.width) AS n
  FROM seg AS o
  GROUP BY o.cls
) AS x
JOIN :cells AS f ON f.cell = x.cell
