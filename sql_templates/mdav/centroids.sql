-- Each group's centroid in standardized coordinates.
SELECT g, :z
FROM :work
WHERE g <> 0
GROUP BY g
