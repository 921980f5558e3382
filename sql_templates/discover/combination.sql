-- One combination of columns: the classes it forms (distinct combinations of values, NULL one
-- value among the others) and the rows it singles out (sample uniques: rows alone in their class).
SELECT COUNT(*) AS classes, SUM(CASE WHEN cnt = 1 THEN 1 ELSE 0 END) AS uniques
FROM (
  SELECT COUNT(*) AS cnt
  FROM :rows AS r
  GROUP BY :columns
) AS c
