-- Distinct persons in every class, from the per-class counts of the column that recognises
-- them (one row per class and person): the fewest, and the classes with fewer than :k.
SELECT MIN(d) AS persons_min, SUM(CASE WHEN d < :k THEN 1 ELSE 0 END) AS persons_violations
FROM (
  SELECT cls, COUNT(*) AS d
  FROM :counts
  GROUP BY cls
) AS per_class
