-- Rows of the cells that are released in parts (or partly suppressed), numbered in random order
-- within their cell: which rows go to which part is random.
SELECT s.*, ROW_NUMBER() OVER (PARTITION BY s._sa_key ORDER BY RANDOM()) AS _sa_rn
FROM :src AS s
JOIN (SELECT DISTINCT k FROM :plan WHERE whole = 0) AS split ON split.k = s._sa_key
