-- Entropy (bits) of one quasi-identifier at its current level (:gen) over the rows left by this
-- round (Wong et al. as John's thesis, Figure 13, gives it, line 15: generalize the attribute with the highest entropy next); NULL
-- when the attribute is at its root (:candidate is false) or no row is left. With s rows per
-- value and N = Σ s: H = (ln N − Σ s·ln s / N) / ln 2 — one hash aggregate over the blocks.
SELECT :attr AS attr, (LN(SUM(s)) - SUM(s * LN(s)) / SUM(s)) / LN(2) AS h
FROM (
  SELECT g, SUM(n) AS s
  FROM (
    SELECT c.r - c.t AS n, :gen AS g
    FROM :now AS c
    CROSS JOIN :lv AS lv
    WHERE c.r > c.t
  ) AS x
  GROUP BY g
) AS t
WHERE :candidate
