-- The rows with the bucket chosen.
SELECT r.*, :bucket AS _sa_bucket
FROM :rows AS r
