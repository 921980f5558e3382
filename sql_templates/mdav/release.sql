-- The release: each numeric quasi-identifier replaced by its group's mean (aggregates over the
-- release stay meaningful), every other column as it is.
SELECT :columns
FROM :src AS s
JOIN :work AS w ON w.id = s.sqlanon_rid
