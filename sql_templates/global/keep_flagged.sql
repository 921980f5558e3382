-- Every class of the chosen node by its label codes (:levels), ok = 1 where it passes the models
-- (:passes): where the failing classes are released at the root rather than withheld, the
-- release gives their rows the root's labels (global/kept.sql).
SELECT :levels, CASE WHEN :passes THEN 1 ELSE 0 END AS ok
FROM (
  SELECT :levels_inner, SUM(n) AS size, :diverse
  FROM :base AS b
  GROUP BY :levels_group
) AS cls
