-- The open cells' rows per position along each attribute a partition may be cut along (the
-- pairs of :ranked that :which selects, with their width, hi and total; :pos is a cell's
-- position along the pair's attribute), and per sensitive value where a model needs the halves'
-- values (:sv, :sv_group; p its protected flag): candidates.sql finds the medians on it,
-- halves.sql counts the halves, so the cells are read once per pair, not once for each. Grouped
-- on the fewest keys: a pair's width, hi and total are one value per pair, carried by MAX (as
-- grouping keys, hashed with every cell, they cost a pass's choice up to a tenth more). Counted
-- as floating point (exact below 2^53), not as PostgreSQL's NUMERIC sum of integers, slow in the
-- windows of candidates.sql.
SELECT c.pid, r.qi, MAX(r.width) AS width, MAX(r.hi) AS hi, MAX(r.total) AS total, :pos AS pos, :sv,
       CAST(SUM(c.n) AS DOUBLE) AS rows_at, MAX(c.p) AS p
FROM :cur AS c
JOIN :ranked AS r ON r.pid = c.pid
WHERE :which
GROUP BY c.pid, r.qi, :pos, :sv_group
