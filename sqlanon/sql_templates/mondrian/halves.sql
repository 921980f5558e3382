-- Rows per sensitive value on each side (:side) of every candidate cut, all attributes in one
-- join; d is the half's t-closeness distance where t is asked (mondrian/halves_d), else 0.
SELECT pid, qi, half, sv, SUM(n) AS cnt, MAX(p) AS p, 0 AS d
FROM (
  SELECT c.pid, k.qi, :side AS half, c.sv, c.n, c.p
  FROM :cur AS c
  JOIN :candidates AS k ON k.pid = c.pid
) AS x
GROUP BY pid, qi, half, sv
