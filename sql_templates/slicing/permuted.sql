-- One column group, its rows numbered in random order inside each bucket (John's thesis, Figure 4:
-- ORDER BY RAND()), from the bucket's :origin on: a place unique over all buckets, on which the
-- groups are joined again.
SELECT :origin + ROW_NUMBER() OVER (PARTITION BY :bucket ORDER BY :shuffle) AS _sa_pos, :columns
FROM :rows
