-- t-closeness with the ordered ground distance |i − j|/(m − 1) (Li et al. 2007, seed 000):
-- D(E) = 1/(m − 1) · Σ_i |Σ_{j<=i} (p_E(v_j) − q(v_j))| over the m released values in order.
-- One row per class and value (classes × m), cumulated by a window.
WITH _sa_n AS (
  SELECT SUM(cnt) AS n, MAX(vr) AS m FROM :counts
), _sa_q AS (
  SELECT vr, SUM(cnt) AS c FROM :counts GROUP BY vr
), _sa_cls AS (
  SELECT cls, SUM(cnt) AS size FROM :counts GROUP BY cls
), _sa_grid AS (
  SELECT k.cls, q.vr, COALESCE(v.cnt, 0) * 1.0 / k.size - q.c * 1.0 / (SELECT n FROM _sa_n) AS r
  FROM _sa_cls AS k
  CROSS JOIN _sa_q AS q
  LEFT JOIN :counts AS v ON v.cls = k.cls AND v.vr = q.vr
)
SELECT MAX(d) AS t_max
FROM (
  SELECT cls, SUM(ABS(cum)) / (CASE WHEN (SELECT m FROM _sa_n) > 1 THEN (SELECT m FROM _sa_n) - 1 ELSE 1 END) AS d
  FROM (
    SELECT cls, SUM(r) OVER (PARTITION BY cls ORDER BY vr ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cum
    FROM _sa_grid
  ) AS g
  GROUP BY cls
) AS per_class
