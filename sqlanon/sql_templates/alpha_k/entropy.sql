-- Entropy (bits) of one quasi-identifier at its current level over the remaining rows
-- (Abbildung 13, line 15: generalize the attribute with the highest entropy next), and how many
-- rows remain (NULL when none: the search is over).
-- :remc is the remaining cells with their level columns, joined once for all candidates.
SELECT :attr AS attr, -SUM(f * LN(f)) / LN(2) AS h, MAX(total) AS total
FROM (
  SELECT SUM(n) * 1.0 / MAX(total) AS f, MAX(total) AS total
  FROM (SELECT n, :gen AS g, SUM(n) OVER () AS total FROM :remc) AS x
  GROUP BY g
) AS t
