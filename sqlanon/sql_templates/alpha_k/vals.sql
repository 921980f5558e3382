-- Protected values of the classes that can release rows at this level: classes that satisfy
-- k and α, and violating classes large enough to hold an α-compliant part of k rows.
SELECT s.cls, s.sv, MAX(s.vcount) AS c
FROM :stat AS s
JOIN :classes AS cl ON cl.cls = s.cls
WHERE (cl.ok = 1 OR cl.size >= :k) AND s.p = 1
GROUP BY s.cls, s.sv
