-- Apply the cuts: each cell of a cut partition whose chosen attribute's position is above the
-- cut (:side = 1) moves to the upper half's new id; both halves stay open, one cut deeper.
SELECT c.cell, c.n, c.p, c.sv, CASE WHEN :side = 1 THEN ch.upper_pid ELSE c.pid END AS pid,
       c.depth + 1 AS depth, :positions
FROM :cur AS c
JOIN :choice AS ch ON ch.pid = c.pid
