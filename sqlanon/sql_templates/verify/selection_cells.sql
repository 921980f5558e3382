-- Frequency table of the selection over the quasi-identifiers' original values: grouped from
-- the pushed-down rows (:count = COUNT(*)), or from the method's count of its cells
-- (Release.counts, :count = SUM(n): thousands of rows instead of the selection's).
SELECT :qis, :count AS cnt
FROM :source
GROUP BY :qis_group
