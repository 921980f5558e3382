-- One row per released class and value of one sensitive attribute, read byte for byte: what
-- l-diversity and t-closeness judge. cls numbers the classes, vr the values in order (NULL is a
-- value of its own in both).
SELECT DENSE_RANK() OVER (ORDER BY :qis) AS cls, DENSE_RANK() OVER (ORDER BY v) AS vr, v, cnt
FROM (
  SELECT :columns, COUNT(*) AS cnt
  FROM :released
  GROUP BY :grouped
) AS g
