-- One attribute's extent in every open partition where it has two positions or more: :hi − :lo
-- (from one scan of the open cells, :extents) over the attribute's whole extent (:domain).
SELECT pid, :qi AS qi, (:hi - :lo) * 1.0 / :domain AS width
FROM :extents
WHERE :hi > :lo
