-- Normalized KL divergence of one quasi-identifier (seed 001 §6.1, after LLBW11).
-- p(v): share of selected rows with original value v. q(v): each released label's rows spread
-- evenly over the original values it covers (w = rows / covered values); suppressed rows carry
-- no mass. Returns D = Σ p·log2(p/q), the entropy H of the original values, and how many values
-- lost all their mass (D is then infinite). p and q meet in one GROUP BY, not in a join.
-- :labels: each original value v with every label lbl it takes at some level.
WITH _sa_lab AS (:labels), _sa_w AS (
  SELECT c.lbl, r.cnt * 1.0 / c.c AS w
  FROM (SELECT lbl, COUNT(*) AS c FROM _sa_lab GROUP BY lbl) AS c
  JOIN (SELECT :released_value AS lbl, SUM(cnt) AS cnt FROM :released_cells GROUP BY :released_value) AS r
    ON r.lbl = c.lbl
), _sa_pq AS (
  SELECT :v AS v, SUM(cnt) AS cnt, 0.0 AS mass FROM :selection_cells GROUP BY :v
  UNION ALL
  SELECT lab.v, 0, _sa_w.w FROM _sa_lab AS lab JOIN _sa_w ON _sa_w.lbl = lab.lbl
), _sa_vq AS (
  SELECT v, SUM(cnt) AS cnt, SUM(mass) AS mass FROM _sa_pq GROUP BY v
)
SELECT SUM(CASE WHEN mass > 0 THEN cnt * 1.0 / :n * LN(cnt * 1.0 / mass) END) / LN(2) AS d,
       -SUM(CASE WHEN cnt > 0 THEN cnt * 1.0 / :n * LN(cnt * 1.0 / :n) END) / LN(2) AS h,
       SUM(CASE WHEN cnt > 0 AND mass = 0 THEN 1 ELSE 0 END) AS lost
FROM _sa_vq
