-- Normalized KL divergence of one quasi-identifier (seed 001 §6.1, after LLBW11).
-- p(v): share of selected rows with original value v. q(v): each released label's rows spread
-- evenly over the original values it covers; suppressed rows carry no mass.
-- Returns D = Σ p·log2(p/q), the entropy H of the original values, and how many values lost
-- all their mass (D is then infinite).
WITH _sa_orig AS (
  SELECT :v AS v, COUNT(*) AS cnt FROM :src GROUP BY :v
), _sa_cover AS (
  SELECT lbl, COUNT(*) AS c FROM :labels GROUP BY lbl
), _sa_rel AS (
  SELECT :released_value AS lbl, COUNT(*) AS cnt FROM :released GROUP BY :released_value
), _sa_q AS (
  SELECT lab.v, SUM(_sa_rel.cnt * 1.0 / _sa_cover.c) AS mass
  FROM :labels AS lab
  JOIN _sa_cover ON _sa_cover.lbl = lab.lbl
  JOIN _sa_rel ON _sa_rel.lbl = lab.lbl
  GROUP BY lab.v
)
SELECT SUM(o.cnt * 1.0 / :n * LN(o.cnt * 1.0 / _sa_q.mass)) / LN(2) AS d,
       -SUM(o.cnt * 1.0 / :n * LN(o.cnt * 1.0 / :n)) / LN(2) AS h,
       SUM(CASE WHEN _sa_q.mass IS NULL THEN 1 ELSE 0 END) AS lost
FROM _sa_orig AS o
LEFT JOIN _sa_q ON _sa_q.v IS NOT DISTINCT FROM o.v
