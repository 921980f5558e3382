-- Sums of squares about the selection's means: of the selected values (SST) and of the
-- released values (SSB), per attribute, side by side in one row.
SELECT *
FROM (SELECT :sst FROM :src AS s CROSS JOIN (SELECT :means FROM :src) AS m) AS total
CROSS JOIN (SELECT :ssb FROM :released AS r CROSS JOIN (SELECT :means FROM :src) AS m) AS between_groups
