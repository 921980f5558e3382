-- One column group, its rows numbered in random order inside each bucket (John's thesis, Figure 4:
-- ORDER BY RAND()); the groups are joined again on (bucket, number). :rows hold each row's
-- bucket (_sa_bucket).
SELECT _sa_bucket, ROW_NUMBER() OVER (PARTITION BY _sa_bucket ORDER BY :shuffle) AS _sa_ord, :columns
FROM :rows
