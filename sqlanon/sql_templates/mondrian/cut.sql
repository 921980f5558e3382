-- Apply the cuts: each cell goes to its partition's side (:side, 0 or 1, from the chosen
-- attribute's position); partitions without a valid cut are closed. Partitions renumbered.
SELECT c.cell, c.n, c.p, c.sv,
       DENSE_RANK() OVER (ORDER BY c.pid, CASE WHEN ch.pid IS NULL THEN 0 ELSE :side END) AS pid,
       CASE WHEN ch.pid IS NULL THEN 0 ELSE 1 END AS active, :positions
FROM :cur AS c
LEFT JOIN :choice AS ch ON ch.pid = c.pid
