-- Every selected row with its sensitive value (_sa_v), the value's order and α flag, its bucket,
-- its rank _sa_r in the bucket along the quasi-identifier order (:key), the bucket's size _sa_nb
-- and phase _sa_u. Class j of m takes the rows with FLOOR((r + u) · m / nb) = j from every
-- bucket: each bucket's share, rounded, of rows at the same place of the QI order (SABRE's
-- redistribution, with approximate neighbours from one sort).
SELECT s.*, o.v AS _sa_v, o.vr AS _sa_vr, o.p AS _sa_p, o.bucket AS _sa_bucket,
       ROW_NUMBER() OVER (PARTITION BY o.bucket ORDER BY :key) - 1 AS _sa_r,
       COUNT(*) OVER (PARTITION BY o.bucket) AS _sa_nb,
       :phase AS _sa_u
FROM :src AS s
JOIN :vals AS o ON :same
