-- Every bucket of a sliced release: its rows n; its l — over the sets of its rows that share the
-- sensitive group's quasi-identifier values (:gq), the smallest ratio of a set's rows to those
-- of its most frequent sensitive value (:sv): no row links to a value likelier than 1/l
-- (Li et al. 2012); and bad, the sets where that link is likelier than 1/:l (compared in
-- exact arithmetic, not through the ratio).
SELECT b, SUM(sz) AS n, MIN(sz * 1.0 / mx) AS l, SUM(CASE WHEN mx * :l > sz THEN 1 ELSE 0 END) AS bad
FROM (
  SELECT b, MAX(cnt) AS mx, SUM(cnt) AS sz
  FROM (SELECT :bucket AS b, :gq_alias, :sv AS sv, COUNT(*) AS cnt FROM :released GROUP BY :bucket, :gq, :sv_group) AS c
  GROUP BY b, :gq_names
) AS g
GROUP BY b
