-- The open partitions without a valid cut are final: their cells leave the open ones, with the
-- number of cuts above them (depth), their rows and positions (:positions: mondrian/members.sql).
-- The partitions are found among the few rows of :extents (every open partition has one), then
-- their cells: a pass that closes none reads no cell.
SELECT c.cell, c.pid, c.depth, c.n, :positions
FROM :cur AS c
JOIN (
  SELECT e.pid
  FROM :extents AS e
  LEFT JOIN :choice AS ch ON ch.pid = e.pid
  WHERE ch.pid IS NULL
) AS e ON e.pid = c.pid
