-- One column group of a sliced release: the fewest released rows that share one combination of
-- its quasi-identifier values (:qis), counted on the released rows' frequency table (:cells,
-- verify/released_cells.sql, over every quasi-identifier).
SELECT MIN(c) AS k_min
FROM (SELECT SUM(cnt) AS c FROM :cells GROUP BY :qis) AS g
