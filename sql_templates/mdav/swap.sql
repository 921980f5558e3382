-- The exchange step of a refinement round (kAnonyMeans, Stoldt 2019): a row x of group a and a
-- row y of a neighbouring group b (:close) trade places where that lowers the SSE. Exactly:
-- a's SSE changes by (n_a − 1) / n_a · d(y, c_a∖x) − n_a / (n_a − 1) · d(x, c_a), where c_a∖x is
-- a's centroid without x (:gain adds b's term, alike), so an exchange counts the centroids'
-- shift, which the pair's k-means step (refine.sql) holds fixed. Each pair's best exchange is a
-- candidate; that the gains add up, one is taken only where it is the best candidate touching
-- either group (no group trades twice in a round). The answer: both rows, with their new groups.
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
), best AS (
  SELECT a, b, xid, yid, gain
  FROM (
    SELECT a, b, xid, yid, gain, ROW_NUMBER() OVER (PARTITION BY a, b ORDER BY gain DESC, xid, yid) AS r
    FROM cand
  ) AS t
  WHERE r = 1 AND gain > :eps
), ends AS (
  SELECT a AS grp, a, b, gain FROM best
  UNION ALL
  SELECT b AS grp, a, b, gain FROM best
), tops AS (
  SELECT a, b, ROW_NUMBER() OVER (PARTITION BY grp ORDER BY gain DESC, a, b) AS r FROM ends
), chosen AS (
  SELECT a, b FROM tops WHERE r = 1 GROUP BY a, b HAVING COUNT(*) = 2
)
SELECT t.xid AS id, t.b AS g FROM best AS t JOIN chosen AS c ON c.a = t.a AND c.b = t.b
UNION ALL
SELECT t.yid AS id, t.a AS g FROM best AS t JOIN chosen AS c ON c.a = t.a AND c.b = t.b
