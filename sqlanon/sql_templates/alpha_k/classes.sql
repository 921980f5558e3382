-- One row per class: size, largest count of one protected value, unprotected rows, and
-- ok = 1 when the class satisfies k and α (α = num/den, compared in integers).
SELECT cls,
       MAX(size) AS size,
       MAX(CASE WHEN p = 1 THEN vcount ELSE 0 END) AS maxp,
       SUM(CASE WHEN p = 0 THEN n ELSE 0 END) AS u,
       CASE WHEN MAX(size) >= :k
             AND MAX(CASE WHEN p = 1 THEN vcount ELSE 0 END) * :den <= :num * MAX(size)
            THEN 1 ELSE 0 END AS ok
FROM :stat
GROUP BY cls
