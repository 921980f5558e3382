-- The blocks of the search at the current levels (:lv): the rows still in the search that share
-- every quasi-identifier's code at these levels (their class, :cls) and the sensitive value.
-- Levels only rise, so a block stays whole in every later round and the search reads one row
-- per block, not per cell. :rows are the cells (before the first round, :n their counts) or
-- the blocks of the round before with what that round left (:n, :left); each block keeps the
-- codes of every level (:codes as MIN(...) of :carried), those below the current ones unused.
-- n is a 32-bit integer, as the cells' (anonymize/cells.sql): PostgreSQL sums those as 64-bit
-- integers, not as NUMERIC; a block of more than 2^31 - 1 rows fails loudly.
SELECT cls, sv, MAX(p) AS p, CAST(SUM(n) AS INT) AS n, :codes
FROM (
  SELECT :cls AS cls, c.sv, c.p, :n AS n, :carried
  FROM :rows AS c
  CROSS JOIN :lv AS lv
  WHERE :left
) AS x
GROUP BY cls, sv
