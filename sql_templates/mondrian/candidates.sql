-- The candidate cuts of the open partitions, one per pair (pid, qi, width) of the histogram
-- (:histogram, mondrian/histogram.sql): at the median row along the attribute (the smallest
-- position whose cumulated rows reach half), or just below the partition's last position when
-- the median is that last one; lo counts the rows at or below the cut, total the partition's
-- (so that k alone is judged here). The windows sort positions, not cells.
SELECT pid, qi, width, CASE WHEN med < hi THEN med ELSE below END AS s,
       CASE WHEN med < hi THEN med_cum ELSE below_cum END AS lo, total
FROM (
  SELECT pid, qi, MAX(width) AS width, MAX(hi) AS hi, MAX(total) AS total,
         MIN(CASE WHEN 2 * cum >= total THEN pos END) AS med,
         MIN(CASE WHEN 2 * cum >= total THEN cum END) AS med_cum,
         MAX(CASE WHEN pos < hi THEN pos END) AS below, MAX(CASE WHEN pos < hi THEN cum END) AS below_cum
  FROM (
    SELECT pid, qi, width, pos, SUM(rows_at) OVER (PARTITION BY pid, qi ORDER BY pos) AS cum,
           SUM(rows_at) OVER (PARTITION BY pid, qi) AS total, MAX(pos) OVER (PARTITION BY pid, qi) AS hi
    FROM (
      SELECT pid, qi, width, pos, SUM(rows_at) AS rows_at
      FROM :histogram
      GROUP BY pid, qi, width, pos
    ) AS g
  ) AS x
  GROUP BY pid, qi
) AS m
