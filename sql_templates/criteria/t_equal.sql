-- t-closeness with the equal ground distance (Li, Li, Venkatasubramanian 2007; the variational distance of John's thesis, §2.3),
-- per class: D(E) = ½ Σ_v |p_E(v) − q(v)| against the whole distribution q (:whole: vr, v, c);
-- a value absent from E contributes q(v), so D(E) = ½ (Σ_{v in E} |p − q| + 1 − Σ_{v in E} q).
-- Sums are cast to floating point once: PostgreSQL's SUM of integers is NUMERIC, slow to divide.
WITH _sa_n AS (
  SELECT CAST(SUM(c) AS DOUBLE) AS n FROM :whole
), _sa_p AS (
  SELECT cls, vr, CAST(cnt AS DOUBLE) / CAST(SUM(cnt) OVER (PARTITION BY cls) AS DOUBLE) AS p FROM :counts
)
SELECT p.cls, 0.5 * (SUM(ABS(p.p - CAST(w.c AS DOUBLE) / n.n)) + 1 - SUM(CAST(w.c AS DOUBLE) / n.n)) AS d
FROM _sa_p AS p
JOIN :whole AS w ON w.vr = p.vr
CROSS JOIN _sa_n AS n
GROUP BY p.cls
