-- Entropy.sql for every quasi-identifier at once, where the database has grouping sets: one
-- scan of the blocks, one grouping set per attribute below its root (:sets over :codes, its
-- code at its current level); :which tells a row's attribute by GROUPING(). :candidate keeps the
-- attributes below their root.
SELECT attr, (LN(SUM(s)) - SUM(s * LN(s)) / SUM(s)) / LN(2) AS h
FROM (
  SELECT :which AS attr, SUM(n) AS s
  FROM (
    SELECT c.r - c.t AS n, :codes
    FROM :now AS c
    CROSS JOIN :lv AS lv
    WHERE c.r > c.t
  ) AS x
  GROUP BY GROUPING SETS (:sets)
) AS t
WHERE :candidate
GROUP BY attr
