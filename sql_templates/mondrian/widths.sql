-- One attribute's extent in every open partition where it has two positions or more: :hi − :lo
-- (from one scan of the open cells, :extents) over the attribute's whole extent (:domain, read
-- from its one-row table by a scalar subquery: joined to it, the loop's planner, without nested
-- loops, planned every pass of Adult 7 times slower); with the partition's highest position
-- along it (hi) and its rows (total), which the candidates need.
SELECT pid, :qi AS qi, (:hi - :lo) * 1.0 / :domain AS width, :hi AS hi, total
FROM :extents
WHERE :hi > :lo
