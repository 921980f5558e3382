-- l-diversity of every class (Machanavajjhala, Kifer, Gehrke, Venkitasubramaniam 2007), from one attribute's per-class counts:
-- distinct values d, entropy h (natural log), the largest count r1 and tail = r_l + … + r_m with
-- r_i the i-th largest count; :holds is the variant's condition on them (LDiversity.holds).
SELECT MIN(d) AS l_distinct_min, MIN(h) AS l_entropy_min,
       SUM(CASE WHEN :holds THEN 0 ELSE 1 END) AS l_violations
FROM (
  SELECT cls, COUNT(*) AS d, -SUM(cnt * 1.0 / size * LN(cnt * 1.0 / size)) AS h, MAX(cnt) AS r1,
         SUM(CASE WHEN rk >= :l THEN cnt ELSE 0 END) AS tail
  FROM (
    SELECT cls, cnt, SUM(cnt) OVER (PARTITION BY cls) AS size,
           ROW_NUMBER() OVER (PARTITION BY cls ORDER BY cnt DESC, vr) AS rk
    FROM :counts
  ) AS ranked
  GROUP BY cls
) AS per_class
