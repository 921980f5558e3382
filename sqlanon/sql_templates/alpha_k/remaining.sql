-- What this round left: each cell's rows that its takes (the round's step in :assign) did not
-- take, with the cell's codes (:codes) for the next rounds.
SELECT s.cell, CAST(s.n - COALESCE(a.n, 0) AS BIGINT) AS n, s.sv, s.p, :codes
FROM :stat AS s
CROSS JOIN :lv AS lv
LEFT JOIN :assign AS a ON a.cell = s.cell AND a.step = lv.step
WHERE s.n - COALESCE(a.n, 0) > 0
