-- Frequency table of the selection: one row per cell (QI tuple and sensitive value), its size
-- n, p = 1 when the sensitive value is α-protected, and the cell's QI values as stored (:qis,
-- raw_<qi>, and :sv; anonymize/frequency.py joins their labels). Grouped on the pushdown's cell
-- key, and where the key is a hash (Backend.hashed_cell_key) on the values too (:grouped): two
-- cells that share a hash then come out as two rows with one key (and are refused), and the
-- values need no aggregate (PostgreSQL: MIN of each value made counting 1.3x slower than
-- grouping on them, and a second hash as a check cost a quarter of the pushdown). Where the key
-- is the values' own encoding, the values are one per key (MariaDB groups 1 M rows on the digest
-- alone in 0.76 s, on it and the values in 1.65 s). The cells are numbered in no particular
-- order. The searches run on this table, thousands of rows instead of millions. n is a 32-bit
-- integer: PostgreSQL sums those as 64-bit integers, not as NUMERIC (the search's windows ran
-- ~5 % faster at 1 M rows); a cell of more than 2^31 - 1 rows fails loudly, never truncated.
-- Rows without a key (:keys empty, :key NULL: frequency.build's keyed) are grouped on the values.
-- :carried are columns of the rows kept as they are (x_<j>) and grouped on too (frequency.build).
-- :p is the rows' α flag (MIN, or the one value the key fixes: Backend.fixed_value), or the
-- constant 0 where they store none (without α); :sv the
-- constant 0 where they store no sensitive value, and then no part of the grouping.
SELECT ROW_NUMBER() OVER () AS cell, :key AS k, :qis, :carried, :sv AS sv, :p AS p, CAST(COUNT(*) AS INT) AS n
FROM :src
GROUP BY :keys, :grouped
