-- The cells still in the search (the plan :assign has not taken all their rows), with their
-- class at the current levels (:cls, an integer computed from the codes and :lv), the class
-- size, and the count of the cell's sensitive value in its class (window functions: one pass).
SELECT cell, n, sv, p, cls,
       SUM(n) OVER (PARTITION BY cls) AS size,
       SUM(n) OVER (PARTITION BY cls, sv) AS vcount
FROM (
  SELECT c.cell, c.n - COALESCE(a.n, 0) AS n, c.sv, c.p, :cls AS cls
  FROM :codes AS c
  CROSS JOIN :lv AS lv
  LEFT JOIN (SELECT cell, SUM(n) AS n FROM :assign GROUP BY cell) AS a ON a.cell = c.cell
  WHERE c.n - COALESCE(a.n, 0) > 0
) AS x
