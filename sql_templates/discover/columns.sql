-- One pass over the table: its rows and, per column, the distinct values (NULL counted as one
-- more where the column holds NULL) and, for numbers, the range; the :measures list.
SELECT COUNT(*) AS n, :measures
FROM :rows AS r
