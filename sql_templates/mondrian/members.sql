-- The final partitions' cells where the search ran on position tuples (mondrian/tuples.sql):
-- every cell joins the partition of its tuple (:cur, closed with its positions), by the
-- tuple's positions (:same).
SELECT f.cell, c.pid
FROM :cur AS c
JOIN :cells AS f ON :same
