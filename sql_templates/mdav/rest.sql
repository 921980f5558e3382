-- The rows left over when no further group can be formed join the group with the nearest
-- centroid (MDAV+ after Stoldt 2019, step 4).
UPDATE :work AS u SET g = t.g
FROM (
  SELECT id, g
  FROM (
    SELECT w.id, c.g, ROW_NUMBER() OVER (PARTITION BY w.id ORDER BY :dist, c.g) AS rn
    FROM :work AS w
    CROSS JOIN :centroids AS c
    WHERE w.g = 0
  ) AS r
  WHERE rn = 1
) AS t
WHERE u.id = t.id
