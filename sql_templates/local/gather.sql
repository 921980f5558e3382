-- What no class could take (the class pid 0 of :shared and :held) must meet every model on its
-- own; where it does not, whole classes join it, those whose distribution of the sensitive
-- value leans most where the rest falls short of the selection's (:whole: sv, q) first (the
-- largest Σ_v p_x(v) (q(v) − r(v)), r: the rest's), up to the first prefix that holds :k rows, a
-- protected share of α = :num/:den at most, and a distance of :t at most from q — there is one:
-- all of them are the selection, at distance 0. The pids of that prefix, the rest's first; none
-- without a rest, or when even the whole selection fails (verification then refuses it).
WITH rest AS (
  SELECT CAST(n AS DOUBLE) AS n FROM :shared WHERE pid = 0
), scored AS (
  SELECT v.pid, SUM(CAST(v.c AS DOUBLE) / CAST(x.n AS DOUBLE) * (w.q - CAST(COALESCE(r.c, 0) AS DOUBLE) / rest.n)) AS score
  FROM :held AS v
  JOIN :shared AS x ON x.pid = v.pid
  JOIN :whole AS w ON w.sv = v.sv
  LEFT JOIN :held AS r ON r.pid = 0 AND r.sv = v.sv
  CROSS JOIN rest
  WHERE v.pid <> 0
  GROUP BY v.pid
), ordered AS (
  SELECT pid, ROW_NUMBER() OVER (ORDER BY score DESC, pid) + 1 AS ord FROM scored
  UNION ALL
  SELECT pid, 1 AS ord FROM :shared WHERE pid = 0
), grown AS (
  SELECT o.ord, w.q,
         SUM(COALESCE(v.c, 0)) OVER (PARTITION BY w.sv ORDER BY o.ord ROWS UNBOUNDED PRECEDING) AS c,
         SUM(x.n) OVER (PARTITION BY w.sv ORDER BY o.ord ROWS UNBOUNDED PRECEDING) AS n,
         SUM(x.pr) OVER (PARTITION BY w.sv ORDER BY o.ord ROWS UNBOUNDED PRECEDING) AS pr
  FROM ordered AS o
  JOIN :shared AS x ON x.pid = o.pid
  CROSS JOIN :whole AS w
  LEFT JOIN :held AS v ON v.pid = o.pid AND v.sv = w.sv
), judged AS (
  SELECT ord, MAX(n) AS n, MAX(pr) AS pr, 0.5 * SUM(ABS(CAST(c AS DOUBLE) / CAST(n AS DOUBLE) - q)) AS d
  FROM grown
  GROUP BY ord
)
SELECT pid
FROM ordered
WHERE ord <= (SELECT MIN(ord) FROM judged WHERE n >= :k AND pr * :den <= :num * n AND d <= :t)
