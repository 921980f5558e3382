-- The release at the chosen node: every row joined by the cell key to its cell's labels (:kept,
-- global/kept.sql; the rows of withheld classes find none); QI values from the labels, every
-- other column as it is. Not sorted: the finish stage orders results randomly.
SELECT :columns
FROM :src AS s
JOIN :kept AS p ON p.k = s._sa_key
