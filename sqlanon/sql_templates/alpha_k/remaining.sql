-- What this round left (its takes carry the round's step in :assign), with each quasi-
-- identifier's code at its current level (:gens, g_<qi>) for the choice of the next attribute.
SELECT s.n - COALESCE(a.n, 0) AS n, :gens
FROM :stat AS s
JOIN :codes AS c ON c.cell = s.cell
CROSS JOIN :lv AS lv
LEFT JOIN :assign AS a ON a.cell = s.cell AND a.step = lv.step
WHERE s.n - COALESCE(a.n, 0) > 0
