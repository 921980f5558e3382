-- Remaining cells with their class at the current levels (:cls, an integer computed from the
-- codes), the class size, and the count of the cell's sensitive value in its class (window
-- functions: one pass, no self-join).
SELECT cell, n, sv, p, cls,
       SUM(n) OVER (PARTITION BY cls) AS size,
       SUM(n) OVER (PARTITION BY cls, sv) AS vcount
FROM (
  SELECT r.cell, r.n, c.sv, c.p, :cls AS cls
  FROM :rem AS r
  JOIN :codes AS c ON c.cell = r.cell
) AS x
