-- Empty release plan: how many rows of which cell are released at which generalization levels.
SELECT cell, n, 0 AS step, :levels FROM :cells WHERE 1 = 0
