-- A round of joins under t-closeness, second step: each cell picks the nearest of its
-- candidates (:near) that stays within t (= :t) with it, and carries that distance d. The
-- class's rows per value (:held: pid, sv, c) with the cell's rows added, and the cell's value
-- where the class lacks it, give the joined class's distance ½ (Σ over its values
-- (|p − q| − q) + 1) against the selection's distribution (:whole: sv, q).
SELECT cell, pid, n, p, sv, d
FROM (
  SELECT j.*, ROW_NUMBER() OVER (PARTITION BY j.cell ORDER BY j.rk) AS pick
  FROM (
    SELECT a.cell, a.pid, a.n, a.p, a.sv, a.rk,
           0.5 * (SUM(ABS(CAST(u.c AS DOUBLE) / CAST(a.cn + a.n AS DOUBLE) - w.q) - w.q) + 1) AS d
    FROM :near AS a
    JOIN (
      SELECT b.cell, b.pid, v.sv, v.c + CASE WHEN v.sv = b.sv THEN b.n ELSE 0 END AS c
      FROM :near AS b
      JOIN :held AS v ON v.pid = b.pid
      UNION ALL
      SELECT b.cell, b.pid, b.sv, b.n AS c
      FROM :near AS b
      LEFT JOIN :held AS v ON v.pid = b.pid AND v.sv = b.sv
      WHERE v.pid IS NULL
    ) AS u ON u.cell = a.cell AND u.pid = a.pid
    JOIN :whole AS w ON w.sv = u.sv
    GROUP BY a.cell, a.pid, a.n, a.p, a.sv, a.rk, a.cn
  ) AS j
  WHERE j.d <= :t
) AS c
WHERE pick = 1
