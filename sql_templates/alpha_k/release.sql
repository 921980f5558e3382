-- The release: whole cells by one hash join, split cells by their row ranges; QI values come
-- from the plan, every other column from the row as it is. Not sorted: the finish stage orders
-- every result randomly. Rows outside every range are suppressed: withheld, and counted.
SELECT :whole_columns
FROM :src AS s
JOIN :plan AS p ON p.k = s._sa_key AND p.whole = 1
UNION ALL
SELECT :split_columns
FROM :ranked AS r
JOIN :plan AS p ON p.k = r._sa_key AND p.whole = 0 AND r._sa_rn BETWEEN p.lo AND p.hi
