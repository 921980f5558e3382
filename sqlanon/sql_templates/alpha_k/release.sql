-- The release: every planned row generalized by its own levels (CASE per row), in random order.
-- Rows outside every range are suppressed: withheld, and counted in the report.
SELECT :columns
FROM :src AS s
JOIN :ranges AS a ON a.cell = s._sa_cell AND s._sa_rn BETWEEN a.lo AND a.hi
ORDER BY RANDOM()
