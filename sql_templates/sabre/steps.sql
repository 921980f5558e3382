-- The pairs (pieces, j) with j < pieces for every number of pieces that a cell of :spans makes:
-- the j-th piece of each cell. At most as many pairs as pieces, since each number in them is
-- some cell's; the numbers are cut at the largest first, so that the join compares a few
-- hundred numbers per count, not every class number.
SELECT k.pieces, n.j
FROM (SELECT DISTINCT pieces FROM :spans) AS k
JOIN :numbers AS n ON n.j < k.pieces
WHERE n.j < (SELECT MAX(pieces) FROM :spans)
