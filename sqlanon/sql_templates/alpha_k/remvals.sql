-- Protected rows per value among all rows still in the search at this level.
SELECT s.sv, SUM(s.n) AS r
FROM :stat AS s
WHERE s.p = 1
GROUP BY s.sv
