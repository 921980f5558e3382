-- One quasi-identifier's distinct stored values (:raw) among the cells, with the value's label
-- at every level below the root (:labels, g_<level>) and each label's dense integer code
-- (:codes, c_<level>, in label order; a NULL label has code 0).
SELECT v, :names, :codes
FROM (
  SELECT v, :labels
  FROM (SELECT DISTINCT :raw AS v FROM :cells) AS d
) AS x
