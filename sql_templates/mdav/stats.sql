-- Mean and population standard deviation of each numeric quasi-identifier over the selection:
-- distances are measured on standardized values (seed 004), so that no unit dominates.
SELECT :stats
FROM :src AS s
CROSS JOIN (SELECT :means FROM :src AS s) AS m
