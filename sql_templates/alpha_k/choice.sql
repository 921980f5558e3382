-- The next round's levels (:levels: the attribute with the highest entropy one level up, the
-- lowest index on ties) as the next row of the levels' history, with done = 1 when this round
-- ran at the root or nothing is left: the loop stops. :lv is the current row. CTE: entropies
-- (entropies.sql, or the union of entropy.sql over the quasi-identifiers).
SELECT lv.step + 1 AS step, CASE WHEN b.attr IS NULL OR :top THEN 1 ELSE 0 END AS done, :levels
FROM :lv AS lv
LEFT JOIN (
  SELECT attr FROM entropies AS e WHERE h IS NOT NULL ORDER BY h DESC, attr LIMIT 1
) AS b ON 1 = 1
