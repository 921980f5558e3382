-- One candidate number of classes (:cls computes a row's class): per class and sensitive value,
-- the rows it would hold; what the criteria judge before a release is built.
SELECT :cls AS cls, _sa_vr AS vr, MIN(_sa_v) AS v, MAX(_sa_p) AS p, COUNT(*) AS cnt
FROM :ranked
GROUP BY :cls, _sa_vr
