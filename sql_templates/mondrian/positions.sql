-- The cells with one split position per quasi-identifier (:positions, dense ranks in the order
-- the partitions are cut along: stored values, or a taxonomy's ancestor path so that siblings
-- stay together), all in one open partition, no cut above it (depth).
SELECT o.cell, o.n, o.p, o.sv, 1 AS pid, 0 AS depth, :positions
FROM :codes AS o
JOIN :cells AS f ON f.cell = o.cell
