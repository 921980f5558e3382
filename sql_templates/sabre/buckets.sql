-- The sensitive attribute's values (vr, in order; v, p as in :whole) with their bucket
-- (:bucket, over the rows before the value, cum, and all rows, n), the bucket's rows nb and its
-- phase u in [0, 1) (:phase): u staggers where each bucket's rounding falls, so that the classes
-- that receive one row more than their share differ from bucket to bucket.
SELECT vr, v, p, bucket, CAST(SUM(c) OVER (PARTITION BY bucket) AS BIGINT) AS nb, :phase AS u
FROM (
  SELECT vr, v, p, c, :bucket AS bucket
  FROM (SELECT vr, v, p, c, SUM(c) OVER (ORDER BY vr) - c AS cum, SUM(c) OVER () AS n FROM :whole) AS w
) AS b
