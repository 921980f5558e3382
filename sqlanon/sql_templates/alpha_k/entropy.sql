-- Entropy (bits) of one quasi-identifier at its current level over the remaining rows
-- (Abbildung 13, line 15: generalize the attribute with the highest entropy next).
SELECT :attr AS attr, -SUM(f * LN(f)) / LN(2) AS h
FROM (
  SELECT SUM(r.n) * 1.0 / :total AS f
  FROM :rem AS r
  JOIN :cells AS c ON c.cell = r.cell
  GROUP BY :gen
) AS t
