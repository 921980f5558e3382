-- The cells of :ranked with the first class their ranks fall in (lo, :first) and the number of
-- pieces they make (:count; sabre/pieces), kept in a table: a join on a stored column is a
-- hash join everywhere (MariaDB joins on an expression by nested loops).
SELECT r.*, :first AS lo, :count AS pieces
FROM :ranked AS r
