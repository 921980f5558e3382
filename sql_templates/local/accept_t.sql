-- local/accept.sql under t-closeness: the joins a class accepts in one round are the cells that
-- picked it (:picks), nearest to the selection's distribution first (d), then the smaller ones,
-- for as long as the class with all of them so far stays within t (= :t) and α-compliant (x: the
-- class as the round began, :held its rows per value). Each prefix's distance is summed over
-- every value of the selection (:whole: sv, q), so a value neither class nor cells hold adds q.
WITH ordered AS (
  SELECT c.cell, c.pid, c.n, c.p, c.sv, ROW_NUMBER() OVER (PARTITION BY c.pid ORDER BY c.d, c.n, c.cell) AS ord
  FROM :picks AS c
), grown AS (
  SELECT o.cell, o.pid, o.ord, w.sv, w.q,
         SUM(CASE WHEN o.sv = w.sv THEN o.n ELSE 0 END) OVER (PARTITION BY o.pid, w.sv ORDER BY o.ord
                                                              ROWS UNBOUNDED PRECEDING) AS added,
         SUM(o.n) OVER (PARTITION BY o.pid, w.sv ORDER BY o.ord ROWS UNBOUNDED PRECEDING) AS grew,
         SUM(o.n * o.p) OVER (PARTITION BY o.pid, w.sv ORDER BY o.ord ROWS UNBOUNDED PRECEDING) AS grew_p
  FROM ordered AS o
  CROSS JOIN :whole AS w
), judged AS (
  SELECT g.cell, g.pid, g.ord,
         CASE WHEN 0.5 * SUM(ABS(CAST(COALESCE(v.c, 0) + g.added AS DOUBLE) / CAST(x.n + g.grew AS DOUBLE) - g.q)) <= :t
                   AND (x.pr + MAX(g.grew_p)) * :den <= :num * (x.n + MAX(g.grew))
              THEN 1 ELSE 0 END AS ok
  FROM grown AS g
  JOIN :shared AS x ON x.pid = g.pid
  LEFT JOIN :held AS v ON v.pid = g.pid AND v.sv = g.sv
  GROUP BY g.cell, g.pid, g.ord, x.n, x.pr
)
SELECT cell, pid
FROM (
  SELECT cell, pid, MIN(ok) OVER (PARTITION BY pid ORDER BY ord ROWS UNBOUNDED PRECEDING) AS ok_all
  FROM judged
) AS prefix
WHERE ok_all = 1
