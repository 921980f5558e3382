-- Normalized KL divergence of one quasi-identifier (seed 001 §6.1, after LLBW11).
-- p(v): share of selected rows with original value v. q(v): each released label's rows spread
-- evenly over the original values it covers; suppressed rows carry no mass.
-- Returns D = Σ p·log2(p/q), the entropy H of the original values, and how many values lost
-- all their mass (D is then infinite).
WITH orig AS (
  SELECT :v AS v, COUNT(*) AS cnt FROM :src GROUP BY :v
), cover AS (
  SELECT lbl, COUNT(*) AS c FROM :labels GROUP BY lbl
), rel AS (
  SELECT :released_value AS lbl, COUNT(*) AS cnt FROM :released GROUP BY :released_value
), q AS (
  SELECT lab.v, SUM(rel.cnt * 1.0 / cover.c) AS mass
  FROM :labels AS lab
  JOIN cover ON cover.lbl = lab.lbl
  JOIN rel ON rel.lbl = lab.lbl
  GROUP BY lab.v
)
SELECT SUM(o.cnt * 1.0 / :n * LN(o.cnt * 1.0 / q.mass)) / LN(2) AS d,
       -SUM(o.cnt * 1.0 / :n * LN(o.cnt * 1.0 / :n)) / LN(2) AS h,
       SUM(CASE WHEN q.mass IS NULL THEN 1 ELSE 0 END) AS lost
FROM orig AS o
LEFT JOIN q ON q.v IS NOT DISTINCT FROM o.v
