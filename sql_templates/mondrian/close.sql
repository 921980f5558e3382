-- The open partitions without a valid cut are final: their cells leave the open ones, with the
-- number of cuts above them (depth).
SELECT c.cell, c.pid, c.depth
FROM :cur AS c
LEFT JOIN :choice AS ch ON ch.pid = c.pid
WHERE ch.pid IS NULL
