-- Entropy (bits) of one quasi-identifier at its current level over the remaining rows
-- (Abbildung 13, line 15: generalize the attribute with the highest entropy next).
-- :remc is the remaining cells with their level columns, joined once for all candidates.
SELECT :attr AS attr, -SUM(f * LN(f)) / LN(2) AS h
FROM (
  SELECT SUM(n) * 1.0 / :total AS f
  FROM :remc
  GROUP BY :gen
) AS t
