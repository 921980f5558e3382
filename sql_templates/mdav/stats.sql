-- Mean and population standard deviation of each numeric quasi-identifier over the selection:
-- distances are measured on standardized values (MDAV+ after Stoldt 2019), so that no unit dominates.
SELECT :stats
FROM :src AS s
CROSS JOIN (SELECT :means FROM :src AS s) AS m
