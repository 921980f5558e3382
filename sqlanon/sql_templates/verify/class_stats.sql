-- Equivalence classes of the released rows, measured on the released values only:
-- size, and the largest count of one protected sensitive value (maxp); then the criteria's
-- aggregates over all classes.
SELECT :aggregates
FROM (
  SELECT SUM(cnt) AS size, MAX(CASE WHEN p = 1 THEN cnt ELSE 0 END) AS maxp
  FROM (
    SELECT :qis, MAX(:p) AS p, COUNT(*) AS cnt
    FROM :released
    GROUP BY :qis_group, :sv
  ) AS cells
  GROUP BY :qis_names
) AS classes
