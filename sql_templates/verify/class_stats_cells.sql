-- As class_stats.sql, where the released rows' frequency table holds one row per class (grouped
-- on the quasi-identifiers alone, no sensitive value among its columns): its rows are the
-- classes, read as they are; :flags are each row's own (at_root).
SELECT :aggregates
FROM (
  SELECT cnt AS size, CASE WHEN p = 1 THEN cnt ELSE 0 END AS maxp, :flags
  FROM :released_cells
) AS classes
