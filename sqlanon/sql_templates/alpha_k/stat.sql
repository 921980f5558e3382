-- The cells still in the search (:rem) with their class at the current levels (:cls, an integer
-- computed from the codes and :lv), the class size, and the count of the cell's sensitive value
-- in its class (window functions: one pass); the codes (:codes, :carried outside)
-- come along for the next round.
SELECT cell, n, sv, p, cls,
       CAST(SUM(n) OVER (PARTITION BY cls) AS BIGINT) AS size,
       CAST(SUM(n) OVER (PARTITION BY cls, sv) AS BIGINT) AS vcount,
       :carried
FROM (
  SELECT c.cell, c.n, c.sv, c.p, :cls AS cls, :codes
  FROM :rem AS c
  CROSS JOIN :lv AS lv
) AS x
