-- Frequency table of the selection over the quasi-identifiers' original values.
SELECT :qis, COUNT(*) AS cnt
FROM :src
GROUP BY :qis_group
