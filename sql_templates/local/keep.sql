-- The cells still left after a node (:src less the cells it released, :fresh): an anti-join,
-- which every engine hashes (a DELETE … WHERE cell IN (…) ran as a nested loop on MariaDB).
SELECT r.*
FROM :src AS r
LEFT JOIN :fresh AS f ON f.cell = r.cell
WHERE f.cell IS NULL
