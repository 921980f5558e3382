-- t-closeness with the ordered ground distance |i − j|/(m − 1) (Li, Li, Venkatasubramanian 2007), per
-- class: D(E) = 1/(m − 1) · Σ_i |Σ_{j<=i} (p_E(v_j) − q(v_j))| over the m values of the whole
-- distribution (:whole: vr, v, c) in order. One row per class and value, cumulated by a window.
WITH _sa_n AS (
  SELECT SUM(c) AS n, COUNT(*) AS m FROM :whole
), _sa_cls AS (
  SELECT cls, SUM(cnt) AS size FROM :counts GROUP BY cls
), _sa_grid AS (
  SELECT k.cls, w.vr, COALESCE(x.cnt, 0) * 1.0 / k.size - w.c * 1.0 / n.n AS r, n.m
  FROM _sa_cls AS k
  CROSS JOIN :whole AS w
  CROSS JOIN _sa_n AS n
  LEFT JOIN :counts AS x ON x.cls = k.cls AND x.vr = w.vr
)
SELECT cls, SUM(ABS(cum)) / (CASE WHEN MAX(m) > 1 THEN MAX(m) - 1 ELSE 1 END) AS d
FROM (
  SELECT cls, m, SUM(r) OVER (PARTITION BY cls ORDER BY vr ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cum
  FROM _sa_grid
) AS g
GROUP BY cls
