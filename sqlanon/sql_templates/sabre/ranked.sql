-- The cells in their bucket along one order of the quasi-identifiers (:key): the ci-th cell of
-- its bucket holds the ranks a … a + n - 1. Class j of m takes the ranks r with
-- FLOOR((r·m + FLOOR(u·m)) / nb) = j from every bucket: each bucket's share, rounded, of rows at
-- the same place of the QI order (SABRE's redistribution, approximate neighbours by one sort
-- of the cells, not of the rows).
SELECT o.cell, f.k, o.sv AS vr, f.sv AS v, o.p, o.n, b.bucket, b.nb, b.u,
       CAST(SUM(o.n) OVER (PARTITION BY b.bucket ORDER BY :key ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
            - o.n AS BIGINT) AS a,
       ROW_NUMBER() OVER (PARTITION BY b.bucket ORDER BY :key) - 1 AS ci
FROM :codes AS o
JOIN :cells AS f ON f.cell = o.cell
JOIN :buckets AS b ON b.vr = o.sv
