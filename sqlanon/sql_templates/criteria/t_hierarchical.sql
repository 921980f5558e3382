-- t-closeness with the hierarchical ground distance level(v_i, v_j)/H (Li et al. 2007, seed 000):
-- with extra(leaf) = p_E(v) − q(v) and extra(N) the sum over N's children, each node N at level
-- ℓ costs ℓ/H · min(positive extra, negative extra of its children); D(E) is the sum of costs.
-- :levels is one SELECT per level (criteria/t_hierarchical_level) over _sa_leaf.
WITH _sa_n AS (
  SELECT SUM(cnt) AS n FROM :counts
), _sa_q AS (
  SELECT vr, MIN(v) AS v, SUM(cnt) AS c FROM :counts GROUP BY vr
), _sa_cls AS (
  SELECT cls, SUM(cnt) AS size FROM :counts GROUP BY cls
), _sa_leaf AS (
  SELECT k.cls, q.vr, q.v, COALESCE(x.cnt, 0) * 1.0 / k.size - q.c * 1.0 / (SELECT n FROM _sa_n) AS e
  FROM _sa_cls AS k
  CROSS JOIN _sa_q AS q
  LEFT JOIN :counts AS x ON x.cls = k.cls AND x.vr = q.vr
), _sa_cost AS (
  :levels
)
SELECT MAX(d) AS t_max
FROM (SELECT cls, SUM(cost) AS d FROM _sa_cost GROUP BY cls) AS per_class
