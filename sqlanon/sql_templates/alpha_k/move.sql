-- Classes that satisfy k and α leave the search at the current levels (Abbildung 13, lines 6-8).
INSERT INTO :assign
SELECT s.cell, s.n, :step, :levels
FROM :stat AS s
JOIN :classes AS c ON c.cls = s.cls
WHERE c.ok = 1
