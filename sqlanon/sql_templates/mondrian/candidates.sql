-- One candidate cut of every active partition along one quasi-identifier (:qi, positions :pos):
-- at the median row (the smallest position whose cumulated rows reach half), or just below the
-- partition's last position when the median is that last one; width is the partition's extent
-- along the attribute over the attribute's whole extent (:domain positions). The rows are first
-- counted per position, so the windows sort positions, not cells.
SELECT pid, :qi AS qi, (MAX(hi) - MIN(pos)) * 1.0 / :domain AS width,
       CASE WHEN MIN(CASE WHEN 2 * cum >= total THEN pos END) < MAX(hi)
            THEN MIN(CASE WHEN 2 * cum >= total THEN pos END)
            ELSE MAX(CASE WHEN pos < hi THEN pos END) END AS s
FROM (
  SELECT pid, pos, SUM(rows_at) OVER (PARTITION BY pid ORDER BY pos) AS cum,
         SUM(rows_at) OVER (PARTITION BY pid) AS total, MAX(pos) OVER (PARTITION BY pid) AS hi
  FROM (SELECT pid, :pos AS pos, SUM(n) AS rows_at FROM :cur WHERE active = 1 GROUP BY pid, :pos) AS g
) AS x
GROUP BY pid
HAVING MAX(hi) > MIN(pos)
