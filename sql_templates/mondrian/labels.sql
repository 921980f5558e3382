-- Each partition's released QI values: per attribute, its cells' common value at the lowest
-- level of the hierarchy where they all share one (:labels, from which levels they share,
-- :shared, and one of its cells), and that level (:levels); n, its rows (:rows: the cells' n, or
-- where the cells stand for QI tuples (mondrian/tuples.sql) the tuples' n that :cur keeps).
SELECT x.pid, :labels, :levels, x.n
FROM (
  SELECT c.pid, MIN(c.cell) AS cell, :shared, SUM(:rows) AS n
  FROM :cur AS c
  JOIN :codes AS o ON o.cell = c.cell
  GROUP BY c.pid
) AS x
JOIN :cells AS f ON f.cell = x.cell
