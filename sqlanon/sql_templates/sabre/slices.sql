-- One candidate number of classes (:m) when every bucket holds one value: class j takes the
-- ranks :start … :next - 1 of every bucket, so it holds their difference of the value's rows.
-- The same counts as sabre/counts, without reading a cell.
SELECT n.j AS cls, b.vr, b.v, b.p, :next - :start AS cnt
FROM :buckets AS b
CROSS JOIN :numbers AS n
WHERE n.j < :m AND :next > :start
