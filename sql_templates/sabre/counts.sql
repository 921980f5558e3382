-- One candidate number of classes: per class and sensitive value, the rows it would hold
-- (from :pieces); what the criteria judge before a release is built.
WITH seg AS (:pieces)
SELECT cls, vr, MIN(v) AS v, MAX(p) AS p, SUM(width) AS cnt
FROM seg
GROUP BY cls, vr
