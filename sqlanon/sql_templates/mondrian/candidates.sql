-- One candidate cut of every open partition along one quasi-identifier (:qi, positions :pos):
-- at the median row (the smallest position whose cumulated rows reach half), or just below the
-- partition's last position when the median is that last one; lo counts the rows at or below
-- the cut, total the partition's (so that k alone is judged here, mondrian/choice_sizes);
-- width is the partition's extent along the attribute over the attribute's whole extent
-- (:domain positions). The rows are first counted per position, so the windows sort
-- positions, not cells; the counts are summed as floating point (exact below 2^53), not as
-- PostgreSQL's NUMERIC sum of integers, slow in the windows.
SELECT pid, qi, width, CASE WHEN med < hi THEN med ELSE below END AS s,
       CASE WHEN med < hi THEN med_cum ELSE below_cum END AS lo, total
FROM (
  SELECT pid, :qi AS qi, (MAX(hi) - MIN(pos)) * 1.0 / :domain AS width, MAX(hi) AS hi, MAX(total) AS total,
         MIN(CASE WHEN 2 * cum >= total THEN pos END) AS med,
         MIN(CASE WHEN 2 * cum >= total THEN cum END) AS med_cum,
         MAX(CASE WHEN pos < hi THEN pos END) AS below, MAX(CASE WHEN pos < hi THEN cum END) AS below_cum
  FROM (
    SELECT pid, pos, SUM(rows_at) OVER (PARTITION BY pid ORDER BY pos) AS cum,
           SUM(rows_at) OVER (PARTITION BY pid) AS total, MAX(pos) OVER (PARTITION BY pid) AS hi
    FROM (SELECT pid, :pos AS pos, CAST(SUM(n) AS DOUBLE) AS rows_at FROM :cur GROUP BY pid, :pos) AS g
  ) AS x
  GROUP BY pid
  HAVING MAX(hi) > MIN(pos)
) AS m
