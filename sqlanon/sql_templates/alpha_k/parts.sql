-- Parts that may be released at this level: whole classes that satisfy k and α, and the
-- α-compliant parts of violating classes; x = rows taken. Ranked so that the parts with the
-- highest protected share leave first: the rows left behind then stay as diluted as possible.
SELECT cls, x, ROW_NUMBER() OVER (ORDER BY share DESC, x DESC, cls) AS rk,
       SUM(x) OVER (ORDER BY share DESC, x DESC, cls ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cum
FROM (
  SELECT m.cls, MAX(cl.maxp) * 1.0 / MAX(cl.size) AS share,
         MAX(m.u) + COALESCE(SUM(CASE WHEN v.c IS NULL THEN 0 WHEN v.c < m.m THEN v.c ELSE m.m END), 0) AS x
  FROM :cap AS m
  JOIN :classes AS cl ON cl.cls = m.cls
  LEFT JOIN :vals AS v ON v.cls = m.cls
  GROUP BY m.cls
) AS t
WHERE x >= :k
