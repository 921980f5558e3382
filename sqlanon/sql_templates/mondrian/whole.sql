-- The whole selection's distribution of the sensitive attribute (vr = its code, v = the value):
-- what t-closeness compares each half with.
SELECT c.sv AS vr, MIN(f.sv) AS v, SUM(c.n) AS c
FROM :codes AS c
JOIN :cells AS f ON f.cell = c.cell
GROUP BY c.sv
