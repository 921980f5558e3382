-- Entropy (bits) of one quasi-identifier at its current level (:gen) over the rows left
-- (Abbildung 13, line 15: generalize the attribute with the highest entropy next); NULL when the
-- attribute is at its root (:candidate is false) or no row is left.
SELECT :attr AS attr, -SUM(f * LN(f)) / LN(2) AS h
FROM (
  SELECT SUM(n) * 1.0 / MAX(total) AS f
  FROM (SELECT n, :gen AS g, SUM(n) OVER () AS total FROM :rem AS c CROSS JOIN :lv AS lv) AS x
  GROUP BY g
) AS t
WHERE :candidate
