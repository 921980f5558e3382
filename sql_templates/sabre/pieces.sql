-- The pieces of every bucket for :m classes: a cell's rows (with the cell's columns of :spans)
-- that fall in one class (cls), width of them. Rank r of a bucket falls in class class_of(r)
-- (sabre/release), so a cell's ranks a … a + n - 1 fall in the classes lo … its last. A
-- bucket with no more rows than classes puts each rank in a class of its own: a piece per rank
-- (:rank, width 1); one with more rows gives every class between at least one: a piece per
-- class (width: the ranks the class, :start … :next - 1, shares with the cell). The j-th piece
-- of a cell comes from a join on its number of pieces with :steps. Arithmetic and equi-joins,
-- no sort.
SELECT x.*,
       CASE WHEN x.nb > :m THEN LEAST(x.a + x.n, :next) - GREATEST(x.a, :start) ELSE 1 END AS width
FROM (
  SELECT c.*, CASE WHEN c.nb > :m THEN c.lo + t.j ELSE :rank END AS cls
  FROM :spans AS c
  JOIN :steps AS t ON t.pieces = c.pieces
) AS x
