-- What is left for the next level: rows of violating classes not taken by a part.
SELECT s.cell, s.n - COALESCE(t.take, 0) AS n
FROM :stat AS s
JOIN :classes AS cl ON cl.cls = s.cls
LEFT JOIN :takes AS t ON t.cell = s.cell
WHERE cl.ok = 0 AND s.n - COALESCE(t.take, 0) > 0
