-- t-closeness with the equal ground distance (seed 000; seed 001 §2.3's variational distance):
-- D(E) = ½ Σ_v |p_E(v) − q(v)| against the whole release's distribution q; a value absent from
-- E contributes q(v), so D(E) = ½ (Σ_{v in E} |p − q| + 1 − Σ_{v in E} q).
WITH _sa_q AS (
  SELECT vr, SUM(cnt) * 1.0 / (SELECT SUM(cnt) FROM :counts) AS q FROM :counts GROUP BY vr
), _sa_p AS (
  SELECT cls, vr, cnt * 1.0 / SUM(cnt) OVER (PARTITION BY cls) AS p FROM :counts
)
SELECT MAX(d) AS t_max
FROM (
  SELECT p.cls, 0.5 * (SUM(ABS(p.p - q.q)) + 1 - SUM(q.q)) AS d
  FROM _sa_p AS p
  JOIN _sa_q AS q ON q.vr = p.vr
  GROUP BY p.cls
) AS per_class
