-- lists.sql as one pass of a loop, for databases whose recursive CTEs scan the whole history
-- every pass (Backend.fast_recursion): the intervals of the blocks of one round (:blocks, its
-- rows of the history) from those of the round after (:above), the same rule and columns.
INSERT INTO :here
SELECT cls, sv, lo, hi, :levels
FROM (
  SELECT b.cls, b.sv, b.r - b.t AS lo, b.r AS hi, :own_levels
  FROM :blocks AS b
  JOIN :lvh AS lv ON lv.step = b.step
  WHERE b.t > 0
  UNION ALL
  SELECT b.cls, b.sv, GREATEST(q.lo - b.before, 0) AS lo, LEAST(q.hi - b.before, b.r - b.t) AS hi, :above_levels
  FROM :blocks AS b
  JOIN :above AS q ON q.cls = b.parent AND q.sv = b.sv
  WHERE GREATEST(q.lo - b.before, 0) < LEAST(q.hi - b.before, b.r - b.t)
) AS u
