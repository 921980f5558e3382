-- Every class's size n, its protected rows pr and, per attribute and level below the root, the code its cells share
-- there (:shared; NULL where they differ): what a cell left over is compared with.
SELECT c.pid, SUM(o.n) AS n, SUM(o.n * o.p) AS pr, :shared
FROM :parts AS c
JOIN :codes AS o ON o.cell = c.cell
GROUP BY c.pid
