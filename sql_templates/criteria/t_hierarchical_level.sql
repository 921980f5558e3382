-- The cost of the nodes of one level: :parent and :child are the value's ancestors at this level
-- and the one below; :weight is level / H.
SELECT cls, :weight * CASE WHEN pos < neg THEN pos ELSE neg END AS cost
FROM (
  SELECT cls, parent, SUM(CASE WHEN e > 0 THEN e ELSE 0 END) AS pos, SUM(CASE WHEN e < 0 THEN -e ELSE 0 END) AS neg
  FROM (
    SELECT cls, parent, child, SUM(e) AS e
    FROM (SELECT cls, :parent AS parent, :child AS child, e FROM _sa_leaf) AS a
    GROUP BY cls, parent, child
  ) AS x
  GROUP BY cls, parent
) AS y
