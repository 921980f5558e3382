-- A round of joins under t-closeness, first step: for every class, every size n of a cell left
-- over (:rem) and every value s, the class's distance d from the selection's distribution
-- (:whole: sv, q) once n rows of s join it, where that keeps it within t (= :t). A class of N
-- rows, c(v) of them v (:held: pid, sv, c), is then at ½ (a − |c(s)/M − q(s)| + |(c(s) + n)/M
-- − q(s)|), M = N + n, a = Σ_v |c(v)/M − q(v)| = Σ over its values of (|c/M − q| − q) + 1: a few
-- rows per class, which the cells left over find by an equi-join (local/join_t.sql).
SELECT pid, n, sv, d
FROM (
  SELECT b.pid, b.n, w.sv,
         0.5 * (b.a - ABS(CAST(COALESCE(h.c, 0) AS DOUBLE) / CAST(b.m AS DOUBLE) - w.q)
                    + ABS(CAST(COALESCE(h.c, 0) + b.n AS DOUBLE) / CAST(b.m AS DOUBLE) - w.q)) AS d
  FROM (
    SELECT v.pid, m.n, x.n + m.n AS m, SUM(ABS(CAST(v.c AS DOUBLE) / CAST(x.n + m.n AS DOUBLE) - w.q) - w.q) + 1 AS a
    FROM :held AS v
    JOIN :shared AS x ON x.pid = v.pid
    JOIN :whole AS w ON w.sv = v.sv
    CROSS JOIN (SELECT DISTINCT n FROM :rem) AS m
    GROUP BY v.pid, m.n, x.n
  ) AS b
  CROSS JOIN :whole AS w
  LEFT JOIN :held AS h ON h.pid = b.pid AND h.sv = w.sv
) AS s
WHERE d <= :t
