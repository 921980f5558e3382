-- The selection's distribution of the sensitive value (sv: its code; q: its share of the
-- rows), what t-closeness measures a node's classes against (anonymize/global_recoding.py).
SELECT sv, CAST(SUM(n) AS DOUBLE) / CAST((SELECT SUM(n) FROM :base) AS DOUBLE) AS q
FROM :base
GROUP BY sv
