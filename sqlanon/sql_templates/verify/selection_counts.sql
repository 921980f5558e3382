-- Frequency table of the selection over the quasi-identifiers' original values, from the
-- method's count of its cells (Release.counts: one row per QI tuple and sensitive value, raw
-- values byte for byte): a GROUP BY over thousands of rows instead of the selection's rows.
SELECT :qis, SUM(n) AS cnt
FROM :counts
GROUP BY :qis_group
