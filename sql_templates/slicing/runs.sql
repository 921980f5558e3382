-- The runs of the rows' order (slicing/rows.sql, whose last keys are the sensitive group's
-- quasi-identifiers as released, :gq, and the sensitive value, :sv): rows equal on the whole
-- order (:order, :grouped) are neighbours, from their first place _sa_start on, _sa_cnt of
-- them. Read from the frequency table (:freq, with the columns the order reads under their own
-- names, :named), so that a probe counts a candidate's buckets on these lines, not on the rows.
SELECT :gq, :sv AS sv,
       CAST(SUM(SUM(s._sa_cnt)) OVER (ORDER BY :order ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
            - SUM(s._sa_cnt) AS BIGINT) AS _sa_start,
       CAST(SUM(s._sa_cnt) AS BIGINT) AS _sa_cnt
FROM (SELECT :named, n AS _sa_cnt FROM :freq) AS s
GROUP BY :grouped
