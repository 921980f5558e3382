-- Frequency table of the released rows, read as an attacker reads them (byte for byte):
-- one row per released QI tuple and sensitive value (columns _q0 … and sv; :grouped, the values
-- or one injective key of them). Every measurement below runs on this table and on the
-- selection's own frequency table, not on the rows.
SELECT :columns, MAX(:p) AS p, COUNT(*) AS cnt
FROM :released
GROUP BY :grouped
