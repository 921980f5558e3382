-- ARX's loss and non-uniform entropy of one quasi-identifier (metrics/arx.py): per released
-- label (:released: lbl, cnt) its rows, joined to the label's coverage in the
-- selection (:labels: each original value v, its rows cnt, every label lbl it takes at some
-- level): vals values and rows under the label. Returns Σ rows · domain share (:share, over
-- l.vals and u.d), Σ rows · ln(selection rows under the label), the selection's distinct values
-- d, and Σ n · ln n over its values (:dist). A released label that covers no selected value
-- counts as the root (share 1, every selected row under it).
SELECT :qi AS qi,
       SUM(r.cnt * COALESCE(:share, 1)) AS shares,
       SUM(r.cnt * LN(COALESCE(l.rws, u.n))) AS logs,
       MAX(u.d) AS d,
       MAX(u.own) AS own
FROM :released AS r
CROSS JOIN (SELECT COUNT(*) AS d, SUM(cnt) AS n, SUM(cnt * LN(cnt)) AS own FROM :dist AS v) AS u
LEFT JOIN (SELECT x.lbl, COUNT(DISTINCT x.v) AS vals, SUM(x.cnt) AS rws FROM :labels AS x GROUP BY x.lbl) AS l
  ON l.lbl = r.lbl
