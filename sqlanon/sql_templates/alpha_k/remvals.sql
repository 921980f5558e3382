-- Protected rows per value among the rows still violating (before any part is taken).
SELECT s.sv, SUM(s.n) AS r
FROM :stat AS s
JOIN :classes AS cl ON cl.cls = s.cls
WHERE cl.ok = 0 AND s.p = 1
GROUP BY s.sv
