-- One node of the generalization lattice (full-domain recoding: every quasi-identifier at one
-- level for the whole selection), measured from the frequency table: its classes are the
-- groups of the cells' label codes at the node's levels (:levels; a quasi-identifier at its root
-- is one value and no group column). A class that fails the models (:fails: fewer than k rows,
-- or fewer than l distinct sensitive values) is withheld. Returns the classes kept, the rows
-- withheld, the rows kept with every quasi-identifier at the root (:at_root), discernibility
-- over the kept classes, and per quasi-identifier the withheld rows' domain share (:shares,
-- for ARX's loss; 1 for the others), and the rows that every node below must suppress
-- (:beyond: the classes failing k or distinct l, a share of those failing t), which tag the
-- node's predecessors where they exceed the limit.
SELECT SUM(CASE WHEN :fails THEN 0 ELSE 1 END) AS classes,
       SUM(CASE WHEN :fails THEN size ELSE 0 END) AS withheld,
       SUM(CASE WHEN :fails THEN 0 WHEN :at_root THEN size ELSE 0 END) AS generalized,
       SUM(CASE WHEN :fails THEN 0 ELSE size * size END) AS dm,
       :shares,
       :beyond AS beyond
FROM (
  SELECT :levels, SUM(n) AS size, :diverse
  FROM :base AS b
  GROUP BY :levels_group
) AS cls
