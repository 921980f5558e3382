-- Rows of the cells that are released in parts (or partly suppressed), numbered in random order
-- within their cell: which rows go to which part is random. Only what the release reads of them
-- (:kept, the columns released as they are) passes the sort: MariaDB's window keeps every row in
-- an internal table, VARCHARs at their declared width.
SELECT :kept, s._sa_key, ROW_NUMBER() OVER (PARTITION BY s._sa_key ORDER BY RANDOM()) AS _sa_rn
FROM :src AS s
JOIN (SELECT DISTINCT k FROM :plan WHERE whole = 0) AS split ON split.k = s._sa_key
