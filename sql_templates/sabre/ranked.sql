-- The cells (with their codes, :codes) in their bucket along one order of the quasi-identifiers
-- (:key): each cell holds the ranks a … a + n - 1 of its bucket. Class j of m takes the ranks r with
-- FLOOR((r·m + FLOOR(u·m)) / nb) = j from every bucket: each bucket's share, rounded, of rows at
-- the same place of the QI order (SABRE's redistribution, approximate neighbours by one sort
-- of the cells, not of the rows).
SELECT o.*, f.k, o.sv AS vr, f.sv AS v, b.bucket, b.nb, b.u,
       CAST(SUM(o.n) OVER (PARTITION BY b.bucket ORDER BY :key ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
            - o.n AS BIGINT) AS a
FROM :codes AS o
JOIN :cells AS f ON f.cell = o.cell
JOIN :buckets AS b ON b.vr = o.sv
