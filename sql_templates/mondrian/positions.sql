-- The cells with one split position per quasi-identifier (:positions, dense ranks in the order
-- the partitions are cut along: stored values, or a taxonomy's ancestor path so that siblings
-- stay together), all in one open partition, no cut above it (depth); sv: the sensitive value's code.
SELECT f.cell, f.n, f.p, f.svc AS sv, 1 AS pid, 0 AS depth, :positions
FROM :cells AS f
