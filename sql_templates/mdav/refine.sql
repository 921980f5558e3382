-- One round of the k-means refinement of an MDAV partition (kAnonyMeans, Stoldt 2019): the
-- rows of two neighbouring groups a and b (:close: b among a's nearest centroids, or a among b's) are
-- reassigned to the two centroids with every group keeping at least k rows. Ordered by
-- da - db, the first s rows go to a and the rest to b; of the splits with k <= s <= m - k the one
-- of least squared distance to the fixed centroids is optimal for them (the pair's k-means step
-- under the size bound), and recomputing the centroids afterwards can only lower the SSE
-- further. A pair is taken where its gain is positive and the best of every pair that touches
-- either group (a matching: no group is in two pairs of one round). The answer: every row that
-- changes group, with its new group.
WITH pairs AS (
  SELECT DISTINCT CASE WHEN a < b THEN a ELSE b END AS a, CASE WHEN a < b THEN b ELSE a END AS b
  FROM :close
), members AS (
  -- a UNION, not a join ON w.g = p.a OR w.g = p.b: no database hashes a join on an OR
  SELECT p.a, p.b, w.id, w.g, :da AS da, :db AS db
  FROM pairs AS p
  JOIN :work AS w ON w.g = p.a
  JOIN :cent AS ca ON ca.g = p.a
  JOIN :cent AS cb ON cb.g = p.b
  UNION ALL
  SELECT p.a, p.b, w.id, w.g, :da AS da, :db AS db
  FROM pairs AS p
  JOIN :work AS w ON w.g = p.b
  JOIN :cent AS ca ON ca.g = p.a
  JOIN :cent AS cb ON cb.g = p.b
), ranked AS (
  SELECT a, b, id, g,
         ROW_NUMBER() OVER (PARTITION BY a, b ORDER BY da - db, id) AS rn,
         COUNT(*) OVER (PARTITION BY a, b) AS m,
         SUM(da) OVER (PARTITION BY a, b ORDER BY da - db, id ROWS UNBOUNDED PRECEDING) AS ca,
         SUM(db) OVER (PARTITION BY a, b ORDER BY da - db, id ROWS UNBOUNDED PRECEDING) AS cb,
         SUM(db) OVER (PARTITION BY a, b) AS tb,
         SUM(CASE WHEN g = a THEN da ELSE db END) OVER (PARTITION BY a, b) AS held
  FROM members
), splits AS (
  SELECT a, b, rn AS s, held - (ca + tb - cb) AS gain,
         ROW_NUMBER() OVER (PARTITION BY a, b ORDER BY ca + tb - cb, rn) AS pick
  FROM ranked
  WHERE rn >= :k AND rn <= m - :k
), best AS (
  SELECT a, b, s, gain FROM splits WHERE pick = 1 AND gain > :eps
), ends AS (
  SELECT a AS grp, a, b, gain FROM best
  UNION ALL
  SELECT b AS grp, a, b, gain FROM best
), tops AS (
  SELECT a, b, ROW_NUMBER() OVER (PARTITION BY grp ORDER BY gain DESC, a, b) AS r FROM ends
), chosen AS (
  SELECT a, b FROM tops WHERE r = 1 GROUP BY a, b HAVING COUNT(*) = 2
)
SELECT r.id, CASE WHEN r.rn <= t.s THEN r.a ELSE r.b END AS g
FROM ranked AS r
JOIN chosen AS c ON c.a = r.a AND c.b = r.b
JOIN best AS t ON t.a = r.a AND t.b = r.b
WHERE CASE WHEN r.rn <= t.s THEN r.a ELSE r.b END <> r.g
