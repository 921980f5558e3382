-- The pieces of every bucket for :m classes: the ranks where a cell or a class begins (class j
-- at :start, the first r of class j), in order; between two of them, one cell's rows (cell,
-- vr, v, p) belong to one class (cls) — width rows. The current class and cell are counts of
-- the starts so far (running sums: MariaDB recomputes a running MAX row by row); ties put a
-- class's start before the cell's, so that the row carrying both is the last of its rank.
SELECT x.cls, r.cell, r.vr, r.v, r.p, x.width
FROM (
  SELECT bucket,
         CAST(SUM(1 - kind) OVER (PARTITION BY bucket ORDER BY pos, kind, j
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - 1 AS BIGINT) AS cls,
         CAST(SUM(kind) OVER (PARTITION BY bucket ORDER BY pos, kind, j
                              ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - 1 AS BIGINT) AS ci,
         COALESCE(LEAD(pos) OVER (PARTITION BY bucket ORDER BY pos, kind, j), nb) - pos AS width
  FROM (
    SELECT bucket, nb, a AS pos, 1 AS kind, -1 AS j FROM :ranked
    UNION ALL
    SELECT b.bucket, b.nb, :start AS pos, 0 AS kind, n.j
    FROM (SELECT DISTINCT bucket, nb, u FROM :buckets) AS b
    CROSS JOIN :numbers AS n
    WHERE n.j < :m
  ) AS ev
) AS x
JOIN :ranked AS r ON r.bucket = x.bucket AND r.ci = x.ci
WHERE x.width > 0
