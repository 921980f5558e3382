-- The class-size frequency table: how many classes (rows alike on every quasi-identifier) there
-- are of each size. Only these (size, count) pairs leave the database.
SELECT class_size, COUNT(*) AS classes
FROM (
  SELECT COUNT(*) AS class_size
  FROM :rows AS r
  GROUP BY :qis
) AS c
GROUP BY class_size
