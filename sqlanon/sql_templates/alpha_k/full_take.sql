-- Would taking every part at once leave a remainder that is still one α-compliant class of at
-- least k rows at the root? Then no budget cut is needed this round (the common case).
SELECT :total - COALESCE((SELECT SUM(x) FROM :parts), 0) AS left_total,
       COALESCE((SELECT MAX(v.r - COALESCE(t.x, 0))
                 FROM :remvals AS v
                 LEFT JOIN (SELECT pv.sv, SUM(pv.x) AS x
                            FROM :partvals AS pv JOIN :parts AS p ON p.cls = pv.cls
                            GROUP BY pv.sv) AS t ON t.sv = v.sv), 0) AS left_most
