-- The whole release's distribution of one sensitive attribute (from its per-class counts):
-- what t-closeness compares each class with.
SELECT vr, MIN(v) AS v, SUM(cnt) AS c FROM :counts GROUP BY vr
