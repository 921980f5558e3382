-- The buckets of one candidate bucketing (:bucket) in which some combination of the sensitive
-- column group's quasi-identifier values (:gq) holds one sensitive value more often than 1/l
-- of its rows: the links slicing must not allow (Li et al. 2012).
SELECT COUNT(*) AS bad
FROM (
  SELECT b, MAX(cnt) AS mx, SUM(cnt) AS sz
  FROM (SELECT :bucket AS b, :gq_alias, :sv AS sv, COUNT(*) AS cnt FROM :rows GROUP BY :bucket, :gq, :sv) AS c
  GROUP BY b, :gq_names
) AS g
WHERE mx * :l > sz
