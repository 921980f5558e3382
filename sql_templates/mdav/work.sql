-- The selected rows in standardized coordinates z = (x - mean) / sd (0 where the column is
-- constant or the value NULL), their squared distance d0 from the centroid (the origin), the
-- sensitive value's code sv (V-MDAV), and g = 0 while the row belongs to no group.
SELECT id, sv, :z, :d0 AS d0, 0 AS g
FROM (
  SELECT s.sqlanon_rid AS id, :sv AS sv, :zs
  FROM :src AS s
  CROSS JOIN :stats AS st
) AS w
