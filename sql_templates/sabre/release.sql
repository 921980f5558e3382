-- The release: every row takes the next rank r of its cell (its number among the cell's rows,
-- in no particular order: they are alike), so its class FLOOR((r·:m + FLOOR(u·:m)) / nb) —
-- exact in floating point, integers below 2^53 — whose labels replace its QI values; every
-- other column (:kept) as it is, and only those pass the sort by cell. The class is an integer,
-- as the labels' key is: no conversion per row in the join. Not sorted: the finish stage
-- orders results randomly.
SELECT :columns
FROM (
  SELECT :kept, CAST(FLOOR(CAST((r.a + ROW_NUMBER() OVER (PARTITION BY s._sa_key) - 1) * :m + FLOOR(r.u * :m) AS DOUBLE)
                           / r.nb) AS BIGINT) AS _sa_cls
  FROM :src AS s
  JOIN :ranked AS r ON r.k = s._sa_key
) AS s
JOIN :labels AS l ON l.cls = s._sa_cls
