-- The buckets of one candidate bucketing in which some combination of the sensitive column
-- group's quasi-identifier values (q_0, q_1, …) holds one sensitive value more often than 1/l
-- of its rows: the links slicing must not allow (Li et al. 2012). Counted on the lines of the
-- order's runs (:lines, slicing/probe_lines.sql): a line's rows fall into the bucket of its
-- first row (f, up to the first place of the next bucket, :first_next), the bucket of its last
-- row (t, from its first place :last_start), and whole buckets between them that hold nothing
-- else — one of them stands for all (from :first_next to :second_next). A piece of no rows
-- (the third of a line across one boundary) changes no count.
SELECT COUNT(*) AS bad
FROM (
  SELECT b, MAX(cnt) AS mx, SUM(cnt) AS sz
  FROM (
    SELECT b, :gq_names, sv, SUM(cnt) AS cnt
    FROM (
      SELECT CASE WHEN p.part = 0 THEN r.f WHEN p.part = 1 THEN r.t ELSE r.f + 1 END AS b, :gq_runs, r.sv AS sv,
             CASE WHEN p.part = 0 AND r.t = r.f THEN r._sa_cnt
                  WHEN p.part = 0 THEN :first_next - r._sa_start
                  WHEN p.part = 1 THEN r._sa_start + r._sa_cnt - :last_start
                  WHEN r.t > r.f + 1 THEN :second_next - :first_next
                  ELSE 0 END AS cnt
      FROM :lines AS r
      JOIN (SELECT 0 AS part UNION ALL SELECT 1 AS part UNION ALL SELECT 2 AS part) AS p ON p.part = 0 OR r.t > r.f
    ) AS pc
    GROUP BY b, :gq_names, sv
  ) AS c
  GROUP BY b, :gq_names
) AS g
WHERE mx * :l > sz
