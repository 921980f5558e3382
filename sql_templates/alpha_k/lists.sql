-- Where each round's released rows lie. A block of round s holds r rows at positions [0, r) of
-- its own: first the r - t it leaves, then the t it releases (its own interval, tstep = s). Its
-- parent in round s + 1 lines up the rows its children leave, child after child (before: what
-- the earlier siblings left), so each interval of the parent falls, moved by -before and cut to
-- [0, r - t), among the rows a child left. Followed down from every round to the first (a
-- recursive CTE: one pass per round inside one statement), this lists for each block of the
-- first round the intervals of its positions released at each round, with that round's levels
-- (:levels). Which rows of a block go where does not matter (they look alike from the round
-- on); this rule only makes each cell's share computable without a pass per cell and round.
WITH RECURSIVE lists (step, cls, sv, tstep, lo, hi) AS (
  SELECT h.step, h.cls, h.sv, h.step, CAST(h.r - h.t AS BIGINT), CAST(h.r AS BIGINT)
  FROM :rounds AS h
  WHERE h.t > 0
  UNION ALL
  SELECT c.step, c.cls, c.sv, q.tstep,
         CAST(GREATEST(q.lo - c.before, 0) AS BIGINT), CAST(LEAST(q.hi - c.before, c.r - c.t) AS BIGINT)
  FROM lists AS q
  JOIN :rounds AS c ON c.step = q.step - 1 AND c.parent = q.cls AND c.sv = q.sv
  WHERE GREATEST(q.lo - c.before, 0) < LEAST(q.hi - c.before, c.r - c.t)
)
SELECT l.cls, l.sv, l.lo, l.hi, :levels
FROM lists AS l
JOIN :lvh AS lv ON lv.step = l.tstep
WHERE l.step = 1
