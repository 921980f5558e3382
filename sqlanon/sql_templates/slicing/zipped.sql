-- Every column group permuted inside each bucket in one pass and without a join (PostgreSQL):
-- per group, the bucket's values are aggregated into arrays in one random order (:keys, a key
-- _sa_r<g> per group), and the arrays are unnested side by side (:unnested; set-returning
-- functions in a select list run in lockstep), which pairs the groups at random as the join
-- on (bucket, position) of seed 001 Abbildung 4 does. :bucket is the bucket of a row of :rows.
SELECT _sa_bucket, :unnested
FROM (SELECT r.*, :bucket AS _sa_bucket, :keys FROM :rows AS r) AS x
GROUP BY _sa_bucket
