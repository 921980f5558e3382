-- One quasi-identifier's distinct stored values (:raw) among the cells, with the value's label
-- at every level below the root (:labels, g_<level>), each label's dense integer code (:codes,
-- c_<level>, in label order; a NULL label has code 0), and the value's position o along the
-- attribute (:position, a dense rank).
SELECT y.*, :position AS o
FROM (
  SELECT x.*, :codes
  FROM (
    SELECT v, :labels
    FROM (SELECT DISTINCT :raw AS v FROM :cells) AS d
  ) AS x
) AS y
