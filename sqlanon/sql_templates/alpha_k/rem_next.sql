-- What is left for the next level: every row no part has taken.
SELECT s.cell, s.n - COALESCE(t.take, 0) AS n
FROM :stat AS s
LEFT JOIN :takes AS t ON t.cell = s.cell
WHERE s.n - COALESCE(t.take, 0) > 0
