-- k alone, where the cells carry released columns (several cells to one QI tuple): the search
-- runs on the distinct position tuples, each named by its least cell and holding its cells'
-- rows, so that the cuts are those of cells without the carried columns (mondrian/positions.sql);
-- mondrian/members.sql gives the final partitions their cells back. n stays a 32-bit integer.
SELECT MIN(f.cell) AS cell, CAST(SUM(f.n) AS INT) AS n, MIN(f.p) AS p, MIN(f.svc) AS sv, 1 AS pid, 0 AS depth,
       :positions
FROM :cells AS f
GROUP BY :grouped
