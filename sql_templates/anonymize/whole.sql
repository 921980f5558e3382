-- The whole selection's distribution of the sensitive attribute (vr = its code, v = the value,
-- p = 1 when α protects it): what t-closeness compares each class with.
SELECT c.sv AS vr, MIN(f.sv) AS v, SUM(c.n) AS c, MAX(c.p) AS p
FROM :codes AS c
JOIN :cells AS f ON f.cell = c.cell
GROUP BY c.sv
