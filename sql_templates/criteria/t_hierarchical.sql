-- t-closeness with the hierarchical ground distance level(v_i, v_j)/H (Li, Li, Venkatasubramanian 2007),
-- per class: with extra(leaf) = p_E(v) − q(v) and extra(N) the sum over N's children, each node
-- N at level ℓ costs ℓ/H · min(positive extra, negative extra of its children); D(E) is the sum.
-- :whole holds the whole distribution (vr, v, c); :levels is one SELECT per level
-- (criteria/t_hierarchical_level) over _sa_leaf.
WITH _sa_n AS (
  SELECT SUM(c) AS n FROM :whole
), _sa_cls AS (
  SELECT cls, SUM(cnt) AS size FROM :counts GROUP BY cls
), _sa_leaf AS (
  SELECT k.cls, w.vr, w.v, COALESCE(x.cnt, 0) * 1.0 / k.size - w.c * 1.0 / n.n AS e
  FROM _sa_cls AS k
  CROSS JOIN :whole AS w
  CROSS JOIN _sa_n AS n
  LEFT JOIN :counts AS x ON x.cls = k.cls AND x.vr = w.vr
), _sa_cost AS (
  :levels
)
SELECT cls, SUM(cost) AS d FROM _sa_cost GROUP BY cls
