-- The cut each partition takes when k alone is asked (no α, l or t: only the halves' sizes
-- matter): the widest of its candidates whose halves, lo rows at or below the cut and
-- total − lo above it, both hold :k rows. The upper half gets a new partition id after the
-- :parts ids in use.
SELECT pid, qi, s, :parts + ROW_NUMBER() OVER (ORDER BY pid) AS upper_pid
FROM (
  SELECT pid, qi, s, ROW_NUMBER() OVER (PARTITION BY pid ORDER BY width DESC, qi) AS rk
  FROM :candidates
  WHERE lo >= :k AND total - lo >= :k
) AS ranked_cuts
WHERE rk = 1
