-- Slicing's link probability (Li et al. 2012): inside a bucket, among the released rows that
-- share the sensitive group's quasi-identifier values, the largest share of one sensitive
-- value, and how many such sets exceed 1/l.
SELECT MAX(mx * 1.0 / sz) AS p_max, SUM(CASE WHEN mx * :l > sz THEN 1 ELSE 0 END) AS violations
FROM (
  SELECT b, MAX(cnt) AS mx, SUM(cnt) AS sz
  FROM (SELECT :bucket AS b, :gq_alias, :sv AS sv, COUNT(*) AS cnt FROM :released GROUP BY :bucket, :gq, :sv) AS c
  GROUP BY b, :gq_names
) AS g
