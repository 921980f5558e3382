-- Rows per sensitive value on each side of every candidate cut (:candidates), counted on the
-- histogram of positions and values (:histogram, mondrian/histogram.sql); d is the half's
-- t-closeness distance where t is asked (mondrian/halves_d), else 0.
SELECT pid, qi, half, sv, CAST(SUM(rows_at) AS BIGINT) AS cnt, MAX(p) AS p, 0 AS d
FROM (
  SELECT h.pid, h.qi, CASE WHEN h.pos <= k.s THEN 0 ELSE 1 END AS half, h.sv, h.rows_at, h.p
  FROM :histogram AS h
  JOIN :candidates AS k ON k.pid = h.pid AND k.qi = h.qi
) AS x
GROUP BY pid, qi, half, sv
