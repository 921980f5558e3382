-- The moves a refinement step takes of its candidates (:cand, from transfer.sql or swap.sql:
-- row xid goes from group a to b, row yid, if any, from b to a). That the gains add up, a
-- candidate is taken only where it is the best of every candidate touching a and the best of
-- every candidate touching b: no group gives or takes twice in a step. The best candidate of
-- all is always taken. The answer: every row that moves, with its new group.
WITH ends AS (
  SELECT a AS grp, a, b, xid, gain FROM :cand
  UNION ALL
  SELECT b AS grp, a, b, xid, gain FROM :cand
), tops AS (
  SELECT a, b, xid, ROW_NUMBER() OVER (PARTITION BY grp ORDER BY gain DESC, a, b, xid) AS r FROM ends
), chosen AS (
  SELECT a, b, xid FROM tops WHERE r = 1 GROUP BY a, b, xid HAVING COUNT(*) = 2
)
SELECT c.xid AS id, c.b AS g FROM :cand AS c JOIN chosen AS t ON t.a = c.a AND t.b = c.b AND t.xid = c.xid
UNION ALL
SELECT c.yid AS id, c.a AS g FROM :cand AS c JOIN chosen AS t ON t.a = c.a AND t.b = c.b AND t.xid = c.xid
WHERE c.yid IS NOT NULL
