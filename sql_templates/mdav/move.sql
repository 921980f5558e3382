-- The rows a refinement round moves (refine.sql) join their new group.
UPDATE :work AS u SET g = t.g
FROM :moves AS t
WHERE u.id = t.id
