-- The release at the chosen node: every row joined by the cell key to its cell's labels at the
-- node's levels (:labels, label_<qi>), only the cells of the classes kept (:keep, joined on
-- the node's codes, :match); QI values from the labels, every other column as it is. Not
-- sorted: the finish stage orders results randomly.
SELECT :columns
FROM :src AS s
JOIN (
  SELECT f.k, :labels
  FROM :cells AS f
  JOIN :keep AS c ON :match
) AS p ON p.k = s._sa_key
