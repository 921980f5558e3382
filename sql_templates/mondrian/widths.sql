-- One attribute's extent in every open partition where it has two positions or more: :hi − :lo
-- (from one scan of the open cells, :extents) over the attribute's whole extent (:domain, from
-- the one row of :domains); with the partition's highest position along it (hi) and its rows
-- (total), which the candidates need.
SELECT pid, :qi AS qi, (:hi - :lo) * 1.0 / :domain AS width, :hi AS hi, total
FROM :extents
CROSS JOIN :domains AS d
WHERE :hi > :lo
