-- The class-size frequency table of the released rows (for the report's re-identification risk),
-- from their frequency table: how many classes there are of each size, fully suppressed rows
-- (every quasi-identifier at its root: :kept is false) left out. Only (size, classes) pairs leave.
SELECT size, COUNT(*) AS classes
FROM (
  SELECT SUM(cnt) AS size
  FROM :released_cells
  WHERE :kept
  GROUP BY :qis
) AS c
GROUP BY size
