-- One column group of a sliced release: the fewest released rows that share one combination of
-- its quasi-identifier values.
SELECT MIN(c) AS k_min
FROM (SELECT :qis, COUNT(*) AS c FROM :released GROUP BY :qis_group) AS g
