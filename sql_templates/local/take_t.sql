-- local/take.sql under t-closeness (equal distance, t = :t): a class of the current node is
-- released only where its distance from the selection's distribution of the sensitive value
-- (q: the share of a cell's value) is at most t. Its distance is ½ Σ_v |p(v) − q(v)| = ½ (Σ over
-- the values it holds of (|p − q| − q) + 1): each value's term shared among its cells by their
-- rows (n of the value's vc), so that one sum over the class's cells adds it up, and only for
-- the classes that hold k rows and α (most of them fail k at the low nodes). At the root the
-- selection as a whole is at distance 0.
SELECT cell, step, :keys
FROM (
  SELECT y.*,
         0.5 * (SUM(CAST(y.n AS DOUBLE) / CAST(y.vc AS DOUBLE)
                    * (ABS(CAST(y.vc AS DOUBLE) / CAST(y.total AS DOUBLE) - y.q) - y.q)) OVER (PARTITION BY :keys) + 1) AS d
  FROM (
    SELECT x.*, SUM(x.n) OVER (PARTITION BY :keys) AS total, SUM(x.n * x.p) OVER (PARTITION BY :keys) AS prot,
           SUM(x.n) OVER (PARTITION BY :keys, x.sv) AS vc
    FROM (
      SELECT r.cell, r.n, r.p, r.sv, r.q, nd.step, :codes
      FROM :rem AS r
      CROSS JOIN (SELECT * FROM :nodes WHERE step = (SELECT step FROM :cur)) AS nd
    ) AS x
  ) AS y
  WHERE (y.total >= :k AND y.prot * :den <= :num * y.total) OR y.step = :last
) AS z
WHERE (total >= :k AND prot * :den <= :num * total AND d <= :t)
   OR (step = :last AND NOT EXISTS (SELECT 1 FROM :taken))
