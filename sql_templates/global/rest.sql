-- The rows a node would release with every quasi-identifier at the root (its failing classes,
-- :classes, and the kept classes whose every label reads as the root), per sensitive value code
-- sv: their rows n and whether α protects the value (p). Judged as one class (t-closeness:
-- ARX releases suppressed rows so; anonymize/global_recoding.py).
SELECT b.sv, SUM(b.n) AS n, MAX(b.p) AS p
FROM :base AS b
JOIN :classes AS f ON :match
GROUP BY b.sv
