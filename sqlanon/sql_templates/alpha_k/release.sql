-- The release: whole cells by one hash join, split cells by their row ranges; QI values come
-- from the plan, every other column from the row as it is; in random order.
-- Rows outside every range are suppressed: withheld, and counted in the report.
SELECT * FROM (
  SELECT :whole_columns
  FROM :src AS s
  JOIN :plan AS p ON p.k = s._sa_key AND p.whole = 1
  UNION ALL
  SELECT :split_columns
  FROM :ranked AS r
  JOIN :plan AS p ON p.k = r._sa_key AND p.whole = 0 AND r._sa_rn BETWEEN p.lo AND p.hi
) AS released
ORDER BY RANDOM()
