-- Frequency table of the selection: one row per cell (QI tuple and sensitive value, numbered by
-- the pushdown), its size n, p = 1 when the sensitive value is α-protected, and the cell's QI
-- values at every level below the root (g_<qi>_<level>), computed once for all rounds.
-- The search runs on this table, thousands of rows instead of millions.
SELECT _sa_cell AS cell, :qis, MIN(_sa_sv) AS sv, MIN(_sa_p) AS p, COUNT(*) AS n
FROM :src
GROUP BY _sa_cell
