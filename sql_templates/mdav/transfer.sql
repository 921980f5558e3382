-- The transfer step of a refinement round (kAnonyMeans, Stoldt 2019): a row of a group A with
-- more than k rows moves to another group B where that lowers the SSE. Exactly: the move
-- changes it by n_B / (n_B + 1) · d(x, c_B) − n_A / (n_A − 1) · d(x, c_A), so it changes the
-- groups' sizes, which exchanges (refine.sql) never do. Each row's best move is a candidate;
-- that the gains add up, a move is taken only where it is the best candidate touching its
-- source and the best touching its destination (no group gives or takes twice in a round, nor
-- both gives and takes). The answer: every row that moves, with its new group.
WITH cand AS (
  SELECT w.id, w.g AS src, c.g AS dest,
         CAST(o.n AS DOUBLE) / (o.n - 1) * :own - CAST(c.n AS DOUBLE) / (c.n + 1) * :dist AS gain
  FROM :work AS w
  JOIN :cent AS o ON o.g = w.g
  CROSS JOIN :cent AS c
  WHERE o.n > :k AND c.g <> w.g
), best AS (
  SELECT id, src, dest, gain
  FROM (
    SELECT id, src, dest, gain, ROW_NUMBER() OVER (PARTITION BY id ORDER BY gain DESC, dest) AS r
    FROM cand
  ) AS t
  WHERE r = 1 AND gain > :eps
), ends AS (
  SELECT src AS grp, id, gain FROM best
  UNION ALL
  SELECT dest AS grp, id, gain FROM best
), tops AS (
  SELECT id, ROW_NUMBER() OVER (PARTITION BY grp ORDER BY gain DESC, id) AS r FROM ends
)
SELECT b.id, MAX(b.dest) AS g
FROM best AS b
JOIN tops AS t ON t.id = b.id AND t.r = 1
GROUP BY b.id
HAVING COUNT(*) = 2
