-- Every column group permuted inside each bucket in one pass and without a join (PostgreSQL):
-- per group, the bucket's values are aggregated into an array in one random order (:keys, a key
-- _sa_r<g> per group; one group may keep the order its rows come in, as the others' orders
-- alone make the links random), and the arrays are unnested side by side (:zipped, _sa_g<g>;
-- set-returning functions in a select list run in lockstep), which pairs the groups at random
-- as the join on (bucket, position) of John's thesis, Figure 4, does; :columns takes each column out
-- of its group. :rows are the rows of slicing/rows.sql (a subquery: read once, never stored),
-- :bucket the bucket of one of them.
SELECT _sa_bucket, :columns
FROM (
  SELECT _sa_bucket, :zipped
  FROM (SELECT r.*, :bucket AS _sa_bucket, :keys FROM :rows AS r) AS x
  GROUP BY _sa_bucket
) AS z
