-- The exchange candidates of a refinement round (kAnonyMeans, Stoldt 2019): a row x of group a
-- and a row y of a neighbouring group b (:close) trade places where that lowers the SSE.
-- Exactly: a's SSE changes by ((n_a − 1) · d(y, c_a) + 2 (x − c_a)·(y − c_a) − (n_a + 1) · d(x, c_a)) / n_a
-- (:gain adds b's term, alike, and negates), so an exchange counts the centroids' shift, which
-- the pair's k-means step (refine.sql) holds fixed. Each row's offsets from both centroids
-- (:offsets) are computed once, not once per row it may trade with. The answer: each pair's
-- best exchange, for pick.sql.
WITH pairs AS (
  SELECT DISTINCT CASE WHEN a < b THEN a ELSE b END AS a, CASE WHEN a < b THEN b ELSE a END AS b
  FROM :close
), xs AS (
  SELECT p.a, p.b, w.id, :offsets
  FROM pairs AS p
  JOIN :cent AS ca ON ca.g = p.a
  JOIN :cent AS cb ON cb.g = p.b
  JOIN :work AS w ON w.g = p.a
  WHERE ca.n > 1 AND cb.n > 1
), ys AS (
  SELECT p.a, p.b, w.id, :offsets
  FROM pairs AS p
  JOIN :cent AS ca ON ca.g = p.a
  JOIN :cent AS cb ON cb.g = p.b
  JOIN :work AS w ON w.g = p.b
  WHERE ca.n > 1 AND cb.n > 1
), cand AS (
  SELECT x.a, x.b, x.id AS xid, y.id AS yid, :gain AS gain
  FROM xs AS x
  JOIN ys AS y ON y.a = x.a AND y.b = x.b
)
SELECT a, b, xid, yid, gain
FROM (
  SELECT a, b, xid, yid, gain, ROW_NUMBER() OVER (PARTITION BY a, b ORDER BY gain DESC, xid, yid) AS r
  FROM cand
) AS t
WHERE r = 1 AND gain > :eps
