-- q_max step (Abbildung 13, lines 9-13): the largest α-compliant part of each violating class.
-- Keep every unprotected row (u) and at most m rows of each protected value. With the class's
-- protected counts c_1 <= … <= c_P, the part has u + A_j + B_j·m rows for m in [c_j, c_j+1]
-- (A_j = c_1 + … + c_j, B_j = P - j), and m is feasible when m·den <= num·(u + A_j + B_j·m).
-- m is the largest feasible value over all segments; segment 0 is [0, c_1].
-- Classes that already satisfy k and α are whole parts (m unbounded).
SELECT cls, MAX(u) AS u, MAX(m) AS m
FROM (
  SELECT cls, u,
         CASE
           WHEN den_left <= 0 THEN nxt
           WHEN CAST(FLOOR(:num * (u + a) * 1.0 / den_left) AS BIGINT) < nxt
             THEN CAST(FLOOR(:num * (u + a) * 1.0 / den_left) AS BIGINT)
           ELSE nxt
         END AS m,
         lo
  FROM (
    SELECT v.cls, cl.u, v.c AS lo,
           SUM(v.c) OVER (PARTITION BY v.cls ORDER BY v.c, v.sv ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS a,
           :den - :num * (COUNT(*) OVER (PARTITION BY v.cls)
                          - ROW_NUMBER() OVER (PARTITION BY v.cls ORDER BY v.c, v.sv)) AS den_left,
           COALESCE(LEAD(v.c) OVER (PARTITION BY v.cls ORDER BY v.c, v.sv), v.c) AS nxt
    FROM :vals AS v
    JOIN :classes AS cl ON cl.cls = v.cls AND cl.ok = 0
    UNION ALL
    SELECT v.cls, MAX(cl.u), 0, 0, :den - :num * COUNT(*), MIN(v.c)
    FROM :vals AS v
    JOIN :classes AS cl ON cl.cls = v.cls AND cl.ok = 0
    GROUP BY v.cls
  ) AS seg
  UNION ALL
  SELECT cls, u, :unbounded, 0 FROM :classes WHERE ok = 1
) AS cand
WHERE m >= lo
GROUP BY cls
