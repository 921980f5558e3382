-- A random sample of the rows (the columns searched), kept in a temp table of the session.
SELECT :columns
FROM :rows AS r
ORDER BY RANDOM()
LIMIT :size
