-- One candidate number of classes: per class and sensitive value, the rows it would hold
-- (from :segments); what the criteria judge before a release is built.
WITH seg AS (:segments)
SELECT cls, vr, MIN(v) AS v, MAX(p) AS p, SUM(width) AS cnt
FROM seg
GROUP BY cls, vr
