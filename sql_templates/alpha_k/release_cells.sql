-- The release where every column released as it is is the cells' sensitive value (:columns: the
-- plan's labels and its sv): the rows of a cell are then alike in every released column, so
-- each range of the plan is written as hi - lo + 1 copies of one row (:series, one row per
-- number from p.lo to p.hi: a function of p's row, or a table of integers that :within bounds),
-- without reading the stored rows again. Not sorted: the finish stage orders every result
-- randomly. Rows outside every range are suppressed.
SELECT :columns
FROM :plan AS p
CROSS JOIN :series AS _sa_n
WHERE :within
