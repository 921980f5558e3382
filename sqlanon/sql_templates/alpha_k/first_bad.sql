-- The budget (q_max of Abbildung 13, applied to every part): parts are taken in rank order while
-- the rows left behind can still form one α-compliant class of at least k rows at the root
-- (Abbildung 13, line 3). The first rank that would break it.
SELECT MIN(rk) FROM (
  SELECT g.rk
  FROM (
    SELECT p.rk, p.cum, v.r - SUM(COALESCE(pv.x, 0)) OVER (PARTITION BY v.sv ORDER BY p.rk
                               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS left_v
    FROM :parts AS p
    CROSS JOIN :remvals AS v
    LEFT JOIN :partvals AS pv ON pv.cls = p.cls AND pv.sv = v.sv
  ) AS g
  WHERE g.left_v * :den > :num * (:total - g.cum)
  UNION ALL
  SELECT p2.rk FROM :parts AS p2
  WHERE :total - p2.cum < :k AND :total - p2.cum > 0
) AS bad
