-- Frequency table of the released rows, read as an attacker reads them (byte for byte):
-- one row per released QI tuple and sensitive value. Every measurement below runs on this
-- table and on the selection's own frequency table, not on the rows.
SELECT :qis, :sv_alias, MAX(:p) AS p, COUNT(*) AS cnt
FROM :released
GROUP BY :qis_group, :sv
