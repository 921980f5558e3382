-- The cells of the current step's node (:nodes, the row of the step in :cur) released there:
-- those still left (:rem) whose class at the node — every attribute's code at the node's level
-- (:codes, k_<qi>) — holds :k rows or more, with a protected share (rows of α-protected
-- values, p = 1) of α = :num/:den at most (always, without α: p = 0). At the last node (the root) the rest is one class,
-- released whatever its size only when nothing was released before (a selection of fewer than
-- :k rows: verification refuses it); else what is left joins the nearest classes (local/join.sql).
SELECT cell, step, :keys
FROM (
  SELECT x.*, SUM(x.n) OVER (PARTITION BY :keys) AS total, SUM(x.n * x.p) OVER (PARTITION BY :keys) AS prot
  FROM (
    SELECT r.cell, r.n, r.p, nd.step, :codes
    FROM :rem AS r
    CROSS JOIN (SELECT * FROM :nodes WHERE step = (SELECT step FROM :cur)) AS nd
  ) AS x
) AS y
WHERE (total >= :k AND prot * :den <= :num * total) OR (step = :last AND NOT EXISTS (SELECT 1 FROM :taken))
