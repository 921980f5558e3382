-- One MDAV+ group (Stoldt 2019, after Domingo-Ferrer & Torra, steps 2-3): the unassigned row farthest from the centroid and its
-- k-1 nearest unassigned rows, all labelled with the first row's id. Ties go to the lower id.
UPDATE :work AS u SET g = t.seed
FROM (
  SELECT w.id, x.id AS seed
  FROM :work AS w
  CROSS JOIN (SELECT * FROM :work WHERE g = 0 ORDER BY d0 DESC, id LIMIT 1) AS x
  WHERE w.g = 0
  ORDER BY :dist, w.id
  LIMIT :k
) AS t
WHERE u.id = t.id
