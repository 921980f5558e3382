-- One column group, its rows numbered in random order inside each bucket (seed 001 Abbildung 4:
-- ORDER BY RAND()); the groups are joined again on (bucket, number). :bucket is the bucket of a
-- row of :rows.
SELECT _sa_bucket, ROW_NUMBER() OVER (PARTITION BY _sa_bucket ORDER BY :shuffle) AS _sa_ord, :columns
FROM (SELECT r.*, :bucket AS _sa_bucket FROM :rows AS r) AS b
