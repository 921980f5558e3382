-- Frequency table of the selection over the quasi-identifiers' original values, grouped from
-- the pushed-down rows: for methods that counted none of their own (Release.counts).
SELECT :qis, COUNT(*) AS cnt
FROM :source
GROUP BY :qis_group
