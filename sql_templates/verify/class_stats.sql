-- Equivalence classes of the released rows: size, and the largest count of one protected
-- sensitive value (maxp), whether its quasi-identifiers are all at the root (flags: at_root);
-- then the criteria's aggregates over all classes.
SELECT :aggregates
FROM (
  SELECT SUM(cnt) AS size, MAX(CASE WHEN p = 1 THEN cnt ELSE 0 END) AS maxp, :flags
  FROM :released_cells
  GROUP BY :qis
) AS classes
