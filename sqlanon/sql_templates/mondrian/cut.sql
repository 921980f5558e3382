-- Apply the cuts: each cell of a cut partition whose chosen attribute's position is above the
-- cut (:side = 1) moves to the upper half's new id; partitions without a valid cut are closed.
SELECT c.cell, c.n, c.p, c.sv,
       CASE WHEN ch.pid IS NOT NULL AND :side = 1 THEN ch.upper_pid ELSE c.pid END AS pid,
       CASE WHEN ch.pid IS NULL THEN 0 ELSE 1 END AS active, :positions
FROM :cur AS c
LEFT JOIN :choice AS ch ON ch.pid = c.pid
