-- The release where every column released as it is is in the cells (the sensitive value sv, or for
-- k alone the columns they carry, x_<j>): a cell's
-- rows are then alike in every released column, so each cell is written as n copies of one row
-- (:series, one row per number from 1 to f.n) with its partition's labels, without reading the
-- stored rows again. Not sorted: the finish stage orders results randomly.
SELECT :columns
FROM :cur AS c
JOIN :cells AS f ON f.cell = c.cell
JOIN :labels AS p ON p.pid = c.pid
CROSS JOIN :series AS _sa_n
