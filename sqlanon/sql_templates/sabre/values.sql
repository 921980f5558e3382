-- The sensitive attribute's values in order (vr), their counts, whether α protects them (p),
-- and their bucket (:bucket, over the running count before the value, cum, and the total, n).
-- u is the bucket's phase in [0, 1): it staggers where each bucket's rounding falls, so that
-- the classes that receive one row more than their share differ from bucket to bucket.
SELECT v, vr, cnt, p, :bucket AS bucket
FROM (
  SELECT v, cnt, p,
         ROW_NUMBER() OVER (ORDER BY v) AS vr,
         SUM(cnt) OVER (ORDER BY v) - cnt AS cum,
         SUM(cnt) OVER () AS n
  FROM (SELECT :attr AS v, COUNT(*) AS cnt, MAX(:p) AS p FROM :src AS s GROUP BY :attr) AS g
) AS o
