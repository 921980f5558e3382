-- Every class's rows per value of the sensitive attribute (sv: its code), what t-closeness
-- judges a join by.
SELECT c.pid, o.sv, SUM(o.n) AS c
FROM :parts AS c
JOIN :codes AS o ON o.cell = c.cell
GROUP BY c.pid, o.sv
