-- Frequency table of the selection: one row per cell (QI tuple and sensitive value, found by
-- the pushdown's cell key), its size n, p = 1 when the sensitive value is α-protected, and the
-- cell's QI values as stored (:qis, raw_<qi>; anonymize/frequency.py joins their labels);
-- collided = 1 when the key is a hash and the cell's rows disagree on its check.
-- The searches run on this table, thousands of rows instead of millions. n is a 32-bit integer:
-- PostgreSQL sums those as 64-bit integers, not as NUMERIC (the search's windows ran ~5 %
-- faster at 1 M rows); a cell of more than 2^31 - 1 rows fails loudly, it is never truncated.
SELECT ROW_NUMBER() OVER (ORDER BY _sa_key) AS cell, _sa_key AS k, :qis,
       MIN(_sa_sv) AS sv, MIN(_sa_p) AS p, CAST(COUNT(*) AS INT) AS n, :collided AS collided
FROM :src
GROUP BY _sa_key
