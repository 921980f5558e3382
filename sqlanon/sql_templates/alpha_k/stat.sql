-- Remaining cells with their class at the current levels: class id, class size, and the
-- count of the cell's sensitive value in its class (window functions: one pass, no self-join).
SELECT r.cell, r.n, c.sv, c.p,
       :cls AS cls,
       SUM(r.n) OVER (PARTITION BY :gens) AS size,
       SUM(r.n) OVER (PARTITION BY :gens_sv) AS vcount
FROM :rem AS r
JOIN :cells AS c ON c.cell = r.cell
