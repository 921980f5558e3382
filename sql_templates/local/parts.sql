-- The released classes: one per step and class codes of the cells taken (:taken), numbered.
SELECT cell, DENSE_RANK() OVER (ORDER BY step, :keys) AS pid
FROM :taken
