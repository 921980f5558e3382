-- Frequency table of the selection: one row per cell (QI tuple and sensitive value, found by
-- the pushdown's cell key), its size n, p = 1 when the sensitive value is α-protected, and the
-- cell's QI values at every level below the root (g_<qi>_<level>) and as stored (raw_<qi>);
-- collided = 1 when the key is a hash and the cell's rows disagree on its check.
-- The searches run on this table, thousands of rows instead of millions.
SELECT ROW_NUMBER() OVER (ORDER BY _sa_key) AS cell, _sa_key AS k, :qis,
       MIN(_sa_sv) AS sv, MIN(_sa_p) AS p, COUNT(*) AS n, :collided AS collided
FROM :src
GROUP BY _sa_key
