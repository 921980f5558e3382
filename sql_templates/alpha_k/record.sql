-- The round's blocks (:now) into the history, each with its parent (:parent: its class at the
-- next round's levels, :lv) and before: the rows its earlier siblings under that parent leave,
-- where the rows it leaves start among the parent's (lists.sql).
SELECT step, cls, sv, r, t, parent,
       CAST(SUM(r - t) OVER (PARTITION BY parent, sv ORDER BY cls
                             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - (r - t) AS BIGINT) AS before
FROM (
  SELECT c.step, c.cls, c.sv, c.r, c.t, :parent AS parent
  FROM :now AS c
  CROSS JOIN :lv AS lv
) AS x
