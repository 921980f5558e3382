-- local/take.sql under t-closeness (equal distance, t = :t): a class of the current node is
-- released only where its distance from the selection's distribution of the sensitive value
-- (:whole: sv, q) is at most t. Its distance is ½ Σ_v |p(v) − q(v)| = ½ (Σ over the values it
-- holds of (|p − q| − q) + 1): one term per value of the class, read from the value's first cell
-- (head = 1). At the root the selection as a whole is at distance 0.
SELECT cell, step, :keys
FROM (
  SELECT y.*,
         0.5 * (SUM(CASE WHEN y.head = 1 THEN ABS(CAST(y.vc AS DOUBLE) / CAST(y.total AS DOUBLE) - y.q) - y.q
                         ELSE 0 END) OVER (PARTITION BY :keys) + 1) AS d
  FROM (
    SELECT x.*, SUM(x.n) OVER (PARTITION BY :keys) AS total, SUM(x.n * x.p) OVER (PARTITION BY :keys) AS prot,
           SUM(x.n) OVER (PARTITION BY :keys, x.sv) AS vc,
           ROW_NUMBER() OVER (PARTITION BY :keys, x.sv ORDER BY x.cell) AS head
    FROM (
      SELECT r.cell, r.n, r.p, r.sv, w.q, nd.step, :codes
      FROM :rem AS r
      JOIN :whole AS w ON w.sv = r.sv
      CROSS JOIN (SELECT * FROM :nodes WHERE step = (SELECT step FROM :cur)) AS nd
    ) AS x
  ) AS y
) AS z
WHERE (total >= :k AND prot * :den <= :num * total AND d <= :t)
   OR (step = :last AND NOT EXISTS (SELECT 1 FROM :taken))
