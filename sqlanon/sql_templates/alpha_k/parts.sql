-- Size of each class's α-compliant part (x = rows taken), ranked largest first.
SELECT cls, x, ROW_NUMBER() OVER (ORDER BY x DESC, cls) AS rk,
       SUM(x) OVER (ORDER BY x DESC, cls ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cum
FROM (
  SELECT m.cls, MAX(m.u) + SUM(CASE WHEN v.c < m.m THEN v.c ELSE m.m END) AS x
  FROM :cap AS m
  JOIN :vals AS v ON v.cls = m.cls
  GROUP BY m.cls
) AS t
WHERE x >= :k
