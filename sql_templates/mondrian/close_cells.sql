-- k alone: the open partitions without a valid cut are final, with the number of cuts above them
-- (depth); and so is every partition whose cells all hold k rows or more (:extents' least). Each
-- cut of such a partition leaves a whole cell, so k rows, on both sides: Mondrian would cut it
-- pass after pass until its parts are its cells' distinct position tuples, whatever the order of
-- the cuts. They are closed as those parts at once, each named by its least cell number negated
-- (the passes number partitions from 1 up). The partitions are found among the few rows of
-- :extents (every open partition has one), then their cells: a pass that closes none reads no cell.
-- Their rows and positions go with them (mondrian/members.sql).
SELECT c.cell,
       CASE WHEN e.least >= :k THEN -MIN(c.cell) OVER (PARTITION BY c.pid, :positions) ELSE c.pid END AS pid,
       c.depth, c.n, :positions
FROM :cur AS c
JOIN (
  SELECT e.pid, e.least
  FROM :extents AS e
  LEFT JOIN :choice AS ch ON ch.pid = e.pid
  WHERE ch.pid IS NULL
) AS e ON e.pid = c.pid
