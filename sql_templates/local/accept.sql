-- The joins a class accepts in one round: the cells that picked it (:picks), those without
-- protected rows first, then the smaller ones, for as long as the class with all of them so far
-- stays α-compliant (x: the class as the round began); the others try again next round.
SELECT cell, pid
FROM (
  SELECT cell, pid, MIN(ok) OVER (PARTITION BY pid ORDER BY p, n, cell ROWS UNBOUNDED PRECEDING) AS ok_all
  FROM (
    SELECT c.cell, c.pid, c.p, c.n,
           CASE WHEN (x.pr + SUM(c.n * c.p) OVER (PARTITION BY c.pid ORDER BY c.p, c.n, c.cell
                                                    ROWS UNBOUNDED PRECEDING)) * :den
                     <= :num * (x.n + SUM(c.n) OVER (PARTITION BY c.pid ORDER BY c.p, c.n, c.cell
                                                    ROWS UNBOUNDED PRECEDING))
                THEN 1 ELSE 0 END AS ok
    FROM :picks AS c
    JOIN :shared AS x ON x.pid = c.pid
  ) AS judged
) AS prefix
WHERE ok_all = 1
