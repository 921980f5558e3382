-- One quasi-identifier's values numbered in the order of :path — a taxonomy's ancestor labels,
-- root side first, then the value; else the value alone — so that a taxonomy's siblings sort
-- together; computed once per distinct value (of :src, the selection's frequency table), not
-- per row.
SELECT x, DENSE_RANK() OVER (ORDER BY :path) AS code
FROM (SELECT DISTINCT :x AS x FROM :src) AS u
