-- Each partition's released QI values: per attribute, its cells' common value at the lowest
-- level of the hierarchy where they all share one (:labels), and that level (:levels).
SELECT c.pid, :labels, :levels, SUM(c.n) AS n
FROM :cur AS c
JOIN :codes AS o ON o.cell = c.cell
JOIN :cells AS f ON f.cell = c.cell
GROUP BY c.pid
