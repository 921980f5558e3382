-- The fewest rows that share one combination of a column group's quasi-identifier values,
-- generalized to the levels tried (:labels).
SELECT MIN(c) AS k_min
FROM (SELECT :labels, SUM(n) AS c FROM :freq GROUP BY :grouped) AS g
