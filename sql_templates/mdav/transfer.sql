-- The transfer candidates of a refinement round (kAnonyMeans, Stoldt 2019): a row x of a group
-- a with more than k rows moves to another group b where that lowers the SSE. Exactly: the move
-- changes it by n_b / (n_b + 1) · d(x, c_b) − n_a / (n_a − 1) · d(x, c_a), so it changes the
-- groups' sizes, which exchanges (swap.sql) never do. The answer: each row's best move, for
-- pick.sql (no row y comes back).
WITH cand AS (
  SELECT w.id, w.g AS src, c.g AS dest,
         CAST(o.n AS DOUBLE) / (o.n - 1) * :own - CAST(c.n AS DOUBLE) / (c.n + 1) * :dist AS gain
  FROM :work AS w
  JOIN :cent AS o ON o.g = w.g
  CROSS JOIN :cent AS c
  WHERE o.n > :k AND c.g <> w.g
)
SELECT src AS a, dest AS b, id AS xid, NULL AS yid, gain
FROM (
  SELECT id, src, dest, gain, ROW_NUMBER() OVER (PARTITION BY id ORDER BY gain DESC, dest) AS r
  FROM cand
) AS t
WHERE r = 1 AND gain > :eps
