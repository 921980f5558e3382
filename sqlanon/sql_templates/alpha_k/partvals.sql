-- Protected rows each part takes, per value.
SELECT m.cls, v.sv, CASE WHEN v.c < m.m THEN v.c ELSE m.m END AS x
FROM :cap AS m
JOIN :vals AS v ON v.cls = m.cls
