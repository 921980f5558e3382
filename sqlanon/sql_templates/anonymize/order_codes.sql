-- One taxonomy quasi-identifier's values numbered along their ancestor paths (:path, root side
-- first), so that siblings sort together; computed once per distinct value (of :src, the
-- selection's frequency table), not per row.
SELECT x, DENSE_RANK() OVER (ORDER BY :path) AS code
FROM (SELECT DISTINCT :x AS x FROM :src) AS u
