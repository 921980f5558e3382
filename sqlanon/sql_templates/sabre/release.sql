-- The release: every row takes the next rank of its cell (its number among the cell's rows,
-- in no particular order: they are alike), so its class (:cls), whose labels replace its QI
-- values; every other column as it is. Not sorted: the finish stage orders results randomly.
SELECT :columns
FROM (
  SELECT s.*, r.a + ROW_NUMBER() OVER (PARTITION BY s._sa_key) - 1 AS _sa_r, r.nb AS _sa_nb, r.u AS _sa_u
  FROM :src AS s
  JOIN :ranked AS r ON r.k = s._sa_key
) AS s
JOIN :labels AS l ON l.cls = :cls
