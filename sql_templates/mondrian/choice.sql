-- The cut each partition takes: among its candidates whose two halves both satisfy every
-- model (:half_ok over size, maxp, d = distinct values, h = entropy, r1 = largest count,
-- tail = the counts from the l-th largest on, dist = t-closeness distance), the widest. The
-- upper half gets a new partition id after the :parts ids in use.
SELECT pid, qi, s, :parts + ROW_NUMBER() OVER (ORDER BY pid) AS upper_pid
FROM (
  SELECT v.pid, v.qi, k.s, ROW_NUMBER() OVER (PARTITION BY v.pid ORDER BY k.width DESC, v.qi) AS rk
  FROM (
    SELECT pid, qi
    FROM (
      SELECT pid, qi, half, CASE WHEN :half_ok THEN 1 ELSE 0 END AS ok
      FROM (
        SELECT pid, qi, half, SUM(cnt) AS size, MAX(CASE WHEN p = 1 THEN cnt ELSE 0 END) AS maxp,
               COUNT(*) AS d, -SUM(cnt * 1.0 / size_w * LN(cnt * 1.0 / size_w)) AS h, MAX(cnt) AS r1,
               SUM(CASE WHEN rk >= :l THEN cnt ELSE 0 END) AS tail, MAX(dist) AS dist
        FROM (
          SELECT pid, qi, half, cnt, p, d AS dist, SUM(cnt) OVER (PARTITION BY pid, qi, half) AS size_w,
                 ROW_NUMBER() OVER (PARTITION BY pid, qi, half ORDER BY cnt DESC, sv) AS rk
          FROM :halves
        ) AS ranked
        GROUP BY pid, qi, half
      ) AS per_half
    ) AS judged
    GROUP BY pid, qi
    HAVING COUNT(*) = 2 AND MIN(ok) = 1
  ) AS v
  JOIN :candidates AS k ON k.pid = v.pid AND k.qi = v.qi
) AS ranked_cuts
WHERE rk = 1
