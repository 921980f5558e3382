-- The candidate cuts of the open partitions, one per pair (pid, qi) of the histogram
-- (:histogram: rows_at rows per position pos, with the pair's width, the partition's highest
-- position hi along qi and its rows total, from the extents): at the median row along the
-- attribute (the smallest position whose cumulated rows reach half: the one row where cum
-- reaches half and cum − rows_at does not), or at the position just below (below) when the
-- median is the partition's last position; lo counts the rows at or below the cut (so that k
-- alone is judged here). One window over the positions: no second window for the totals, no
-- grouping after it.
SELECT pid, qi, width, CASE WHEN pos < hi THEN pos ELSE below END AS s,
       CASE WHEN pos < hi THEN cum ELSE cum - rows_at END AS lo, total
FROM (
  SELECT pid, qi, width, hi, total, pos, rows_at,
         SUM(rows_at) OVER (PARTITION BY pid, qi ORDER BY pos) AS cum,
         LAG(pos) OVER (PARTITION BY pid, qi ORDER BY pos) AS below
  FROM :histogram
) AS x
WHERE 2 * cum >= total AND 2 * (cum - rows_at) < total
