-- The selected rows with their quasi-identifiers generalized to their group's level (:columns),
-- their place along the QI order (_sa_rank, from 0) and their bucket when the policy names an
-- attribute to split by (_sa_by).
SELECT :columns, ROW_NUMBER() OVER (ORDER BY :key) - 1 AS _sa_rank, :by AS _sa_by
FROM :src AS s
