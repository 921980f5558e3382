-- The exchange candidates of a refinement round (kAnonyMeans, Stoldt 2019): a row x of group a
-- and a row y of a neighbouring group b (:close) trade places where that lowers the SSE.
-- Exactly: a's SSE changes by (n_a − 1) / n_a · d(y, c_a∖x) − n_a / (n_a − 1) · d(x, c_a), where
-- c_a∖x is a's centroid without x (:gain adds b's term, alike), so an exchange counts the
-- centroids' shift, which the pair's k-means step (refine.sql) holds fixed. The answer: each
-- pair's best exchange, for pick.sql.
WITH pairs AS (
  SELECT DISTINCT CASE WHEN a < b THEN a ELSE b END AS a, CASE WHEN a < b THEN b ELSE a END AS b
  FROM :close
), cand AS (
  SELECT p.a, p.b, x.id AS xid, y.id AS yid, :gain AS gain
  FROM pairs AS p
  JOIN :cent AS ca ON ca.g = p.a
  JOIN :cent AS cb ON cb.g = p.b
  JOIN :work AS x ON x.g = p.a
  JOIN :work AS y ON y.g = p.b
  WHERE ca.n > 1 AND cb.n > 1
)
SELECT a, b, xid, yid, gain
FROM (
  SELECT a, b, xid, yid, gain, ROW_NUMBER() OVER (PARTITION BY a, b ORDER BY gain DESC, xid, yid) AS r
  FROM cand
) AS t
WHERE r = 1 AND gain > :eps
