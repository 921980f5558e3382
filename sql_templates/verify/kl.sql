-- Normalized KL divergence of one quasi-identifier (John's thesis §6.1, after Li, Liu, Baig & Wong 2011).
-- p(v): share of selected rows with original value v. q(v): each released label's rows spread
-- evenly over the original values it covers (mass = rows / covered values); suppressed rows
-- carry no mass. Returns D = Σ p·log2(p/q), the entropy H of the original values, and how many
-- values lost all their mass (D is then infinite).
-- :labels pairs each original value v of the selection, with its rows cnt, with every label lbl
-- it takes at some level: the selection is read once; :released, each released label lbl with
-- its rows cnt. No CTE: MariaDB computes a CTE once per reference, and every quasi-identifier's
-- statement is one part of a UNION.
SELECT :qi AS qi,
       SUM(CASE WHEN mass > 0 THEN cnt * 1.0 / :n * LN(cnt * 1.0 / mass) END) / LN(2) AS d,
       -SUM(CASE WHEN cnt > 0 THEN cnt * 1.0 / :n * LN(cnt * 1.0 / :n) END) / LN(2) AS h,
       SUM(CASE WHEN cnt > 0 AND mass = 0 THEN 1 ELSE 0 END) AS lost
FROM (
  SELECT l.v, MAX(l.cnt) AS cnt, COALESCE(SUM(r.cnt * 1.0 / l.c), 0) AS mass
  FROM (SELECT x.v, x.cnt, x.lbl, COUNT(*) OVER (PARTITION BY x.lbl) AS c FROM :labels AS x) AS l
  LEFT JOIN :released AS r ON r.lbl = l.lbl
  GROUP BY l.v
) AS vq
