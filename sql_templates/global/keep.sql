-- The classes the chosen node releases: its label codes (:levels) of the classes that pass
-- the models (:passes, over size and dl).
SELECT :levels, 1 AS one
FROM (
  SELECT :levels_inner, SUM(n) AS size, :diverse
  FROM :base AS b
  GROUP BY :levels_group
) AS cls
WHERE :passes
