-- The halves with each half's t-closeness distance d.
SELECT h.pid, h.qi, h.half, h.sv, h.cnt, h.p, x.d
FROM :halves AS h
JOIN :dist AS x ON x.cls = h.pid * :mul + h.qi * 2 + h.half
