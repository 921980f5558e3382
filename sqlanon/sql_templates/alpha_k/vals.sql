-- Protected values of the violating classes that are large enough to give an α-compliant part.
SELECT s.cls, s.sv, MAX(s.vcount) AS c
FROM :stat AS s
JOIN :classes AS cl ON cl.cls = s.cls
WHERE cl.ok = 0 AND cl.size >= :k AND s.p = 1
GROUP BY s.cls, s.sv
