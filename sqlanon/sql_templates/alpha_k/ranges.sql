-- Turn the release plan into row-number ranges per cell; rows of a cell are numbered in random
-- order by the pushdown, so which rows of a split cell go where is random too.
SELECT cell, :levels,
       SUM(n) OVER (PARTITION BY cell ORDER BY step ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - n + 1 AS lo,
       SUM(n) OVER (PARTITION BY cell ORDER BY step ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS hi
FROM :assign
