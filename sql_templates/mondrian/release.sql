-- The release: every row joined to its cell's partition labels by the cell key; QI values from
-- the labels, every other column as it is. Not sorted: the finish stage orders results randomly.
SELECT :columns
FROM :src AS s
JOIN (
  SELECT f.k, l.*
  FROM :cur AS c
  JOIN :cells AS f ON f.cell = c.cell
  JOIN :labels AS l ON l.pid = c.pid
) AS p ON p.k = s._sa_key
