-- The next attribute to generalize (highest entropy, lowest index on ties), and done = 1 when
-- this round ran at the root or nothing is left: the loop stops. CTE: entropies (the union of
-- entropy.sql over the quasi-identifiers). One row per round, kept: a table the loop emptied
-- would have every statement that reads it planned again at every round.
SELECT lv.step, CASE WHEN b.attr IS NULL OR :top THEN 1 ELSE 0 END AS done, COALESCE(b.attr, -1) AS attr
FROM :lv AS lv
LEFT JOIN (
  SELECT attr FROM entropies AS e WHERE h IS NOT NULL ORDER BY h DESC, attr LIMIT 1
) AS b ON 1 = 1
