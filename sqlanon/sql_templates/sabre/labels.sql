-- One quasi-identifier's released value per class: its rows' common value at the lowest level of
-- the hierarchy where they all share one (:label), that level (:level), and the rows it covers.
-- Each distinct value is generalized once (:levels, columns e_0 …), not once per class; a NULL
-- finds no match, and a class of NULL and other values shares nothing below the root.
SELECT d.cls, :label AS label, :level AS level, SUM(d.n) AS n
FROM (SELECT _sa_cls AS cls, :x AS x, COUNT(*) AS n FROM :assigned GROUP BY _sa_cls, :x) AS d
LEFT JOIN (SELECT x, :levels FROM (SELECT DISTINCT :x AS x FROM :assigned) AS u) AS h ON h.x = d.x
GROUP BY d.cls
