-- Two attributes' association over the frequency table: s = Σ n_ab² / (n_a · n_b) and the
-- numbers of their distinct values; Cramér's V² = (s − 1) / (min(da, db) − 1).
SELECT SUM(c * c * 1.0 / (ra * rb)) AS s, MAX(da) AS da, MAX(db) AS db
FROM (
  SELECT c, SUM(c) OVER (PARTITION BY a) AS ra, SUM(c) OVER (PARTITION BY b) AS rb,
         DENSE_RANK() OVER (ORDER BY a) AS da, DENSE_RANK() OVER (ORDER BY b) AS db
  FROM (SELECT :a AS a, :b AS b, SUM(n) AS c FROM :freq GROUP BY :a, :b) AS p
) AS w
