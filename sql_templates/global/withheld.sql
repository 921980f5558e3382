-- The classes a node withholds (:fails), by their label codes at the node's levels (:levels):
-- what the KL divergence and the entropy of a candidate node need, per label, beyond the
-- counts of global/node.sql. At most as many rows as the suppression limit allows rows.
SELECT :levels, size, 1 AS one
FROM (
  SELECT :levels_inner, SUM(n) AS size, :diverse
  FROM :base AS b
  GROUP BY :levels_group
) AS cls
WHERE :fails
