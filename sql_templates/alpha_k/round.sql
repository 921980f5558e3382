-- One round of the search at the current levels (Wong et al. as John's thesis, Figure 13, gives it, lines 4-13) as one statement:
-- the parts of the classes of the remaining blocks (:blk, one row per class and sensitive
-- value) that may be released, the q_max budget, and the rows each part takes from each block,
-- written with every block of the round to :now (r rows, t taken; the round's step from
-- :lv; the codes, :codes, for the rounds after). The intermediates are CTEs.
INSERT INTO :now
WITH classes AS (
  -- One row per class that can release rows at this level, that is one of at least k rows
  -- (most are smaller in the first rounds: 1,195 of 8,553 classes on Adult): its size, largest
  -- count of one protected value, unprotected rows, and ok = 1 when the class satisfies k and α
  -- (α = num/den, compared in integers).
  SELECT cls,
         SUM(n) AS size,
         MAX(CASE WHEN p = 1 THEN n ELSE 0 END) AS maxp,
         SUM(CASE WHEN p = 0 THEN n ELSE 0 END) AS u,
         CASE WHEN SUM(n) >= :k
               AND MAX(CASE WHEN p = 1 THEN n ELSE 0 END) * :den <= :num * SUM(n)
              THEN 1 ELSE 0 END AS ok
  FROM :blk
  GROUP BY cls
  HAVING SUM(n) >= :k
),
vals AS (
  -- Protected values of those classes: of classes that satisfy k and α, and of violating
  -- classes large enough to hold an α-compliant part of k rows.
  SELECT s.cls, s.sv, s.n AS c
  FROM :blk AS s
  JOIN classes AS cl ON cl.cls = s.cls
  WHERE s.p = 1
),
cap AS (
  -- q_max step (lines 9-13): the largest α-compliant part of each violating class. Keep every
  -- unprotected row (u) and at most m rows of each protected value. With the class's protected
  -- counts c_1 <= … <= c_P, the part has u + A_j + B_j·m rows for m in [c_j, c_j+1]
  -- (A_j = c_1 + … + c_j, B_j = P - j), and m is feasible when m·den <= num·(u + A_j + B_j·m).
  -- m is the largest feasible value over all segments; segment 0 is [0, c_1]. Classes that
  -- already satisfy k and α are whole parts (m unbounded).
  SELECT cls, MAX(u) AS u, MAX(m) AS m
  FROM (
    SELECT cls, u,
           CASE
             WHEN den_left <= 0 THEN nxt
             WHEN CAST(FLOOR(:num * (u + a) * 1.0 / den_left) AS BIGINT) < nxt
               THEN CAST(FLOOR(:num * (u + a) * 1.0 / den_left) AS BIGINT)
             ELSE nxt
           END AS m,
           lo
    FROM (
      SELECT v.cls, cl.u, v.c AS lo,
             SUM(v.c) OVER (PARTITION BY v.cls ORDER BY v.c, v.sv ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS a,
             :den - :num * (COUNT(*) OVER (PARTITION BY v.cls)
                            - ROW_NUMBER() OVER (PARTITION BY v.cls ORDER BY v.c, v.sv)) AS den_left,
             COALESCE(LEAD(v.c) OVER (PARTITION BY v.cls ORDER BY v.c, v.sv), v.c) AS nxt
      FROM vals AS v
      JOIN classes AS cl ON cl.cls = v.cls AND cl.ok = 0
      UNION ALL
      SELECT v.cls, MAX(cl.u), 0, 0, :den - :num * COUNT(*), MIN(v.c)
      FROM vals AS v
      JOIN classes AS cl ON cl.cls = v.cls AND cl.ok = 0
      GROUP BY v.cls
    ) AS seg
    UNION ALL
    SELECT cls, u, :unbounded, 0 FROM classes WHERE ok = 1
  ) AS cand
  WHERE m >= lo
  GROUP BY cls
),
parts AS (
  -- Parts that may be released: whole classes that satisfy k and α, and the α-compliant parts
  -- of violating classes; x = rows taken. Ranked so that the parts with the highest protected
  -- share leave first: the rows left behind then stay as diluted as possible.
  SELECT cls, x, ROW_NUMBER() OVER (ORDER BY share DESC, x DESC, cls) AS rk,
         SUM(x) OVER (ORDER BY share DESC, x DESC, cls ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cum
  FROM (
    SELECT m.cls, MAX(cl.maxp) * 1.0 / MAX(cl.size) AS share,
           MAX(m.u) + COALESCE(SUM(CASE WHEN v.c IS NULL THEN 0 WHEN v.c < m.m THEN v.c ELSE m.m END), 0) AS x
    FROM cap AS m
    JOIN classes AS cl ON cl.cls = m.cls
    LEFT JOIN vals AS v ON v.cls = m.cls
    GROUP BY m.cls
  ) AS t
  WHERE x >= :k
),
partvals AS (
  -- Protected rows each part takes, per value.
  SELECT m.cls, v.sv, CASE WHEN v.c < m.m THEN v.c ELSE m.m END AS x
  FROM cap AS m
  JOIN vals AS v ON v.cls = m.cls
),
remvals AS (
  -- Protected rows per value among all rows still in the search.
  SELECT sv, SUM(n) AS r FROM :blk WHERE p = 1 GROUP BY sv
),
tot AS (
  -- The remainder as one class at the root (line 3's test): before this round (total, most)
  -- and after taking every part at once (total - taken, left_most).
  SELECT (SELECT COALESCE(SUM(n), 0) FROM :blk) AS total,
         (SELECT COALESCE(MAX(r), 0) FROM remvals) AS most,
         (SELECT COALESCE(SUM(x), 0) FROM parts) AS taken,
         (SELECT COALESCE(MAX(v.r - COALESCE(t.x, 0)), 0)
          FROM remvals AS v
          LEFT JOIN (SELECT pv.sv, SUM(pv.x) AS x
                     FROM partvals AS pv JOIN parts AS p ON p.cls = pv.cls
                     GROUP BY pv.sv) AS t ON t.sv = v.sv) AS left_most
),
bad AS (
  -- The first rank whose part would leave a remainder that is no longer one α-compliant class
  -- of at least k rows at the root.
  SELECT MIN(rk) AS rk FROM (
    SELECT g.rk
    FROM (
      SELECT p.rk, p.cum, o.total,
             v.r - SUM(COALESCE(pv.x, 0)) OVER (PARTITION BY v.sv ORDER BY p.rk
                                                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS left_v
      FROM parts AS p
      CROSS JOIN remvals AS v
      CROSS JOIN tot AS o
      LEFT JOIN partvals AS pv ON pv.cls = p.cls AND pv.sv = v.sv
    ) AS g
    WHERE g.left_v * :den > :num * (g.total - g.cum)
    UNION ALL
    SELECT p2.rk FROM parts AS p2 CROSS JOIN tot AS o2
    WHERE o2.total - p2.cum < :k AND o2.total - p2.cum > 0
  ) AS b
),
budget AS (
  -- The budget of q_max, applied to every part: parts leave in rank order while the rows left
  -- behind can still form one α-compliant class of k rows at the root. No budget at the root
  -- (what remains is one class), when the selection cannot meet that test even there
  -- (suppression is unavoidable), or when taking every part keeps it (the common case).
  SELECT CASE
           WHEN :top THEN :unbounded
           WHEN o.total < :k OR o.most * :den > :num * o.total THEN :unbounded
           WHEN o.total - o.taken = 0
             OR (o.total - o.taken >= :k AND o.left_most * :den <= :num * (o.total - o.taken)) THEN :unbounded
           ELSE COALESCE((SELECT rk FROM bad), :unbounded)
         END AS lim
  FROM tot AS o
  CROSS JOIN :lv AS lv
),
takes AS (
  -- Rows taken from each block by the allowed parts: all unprotected rows of the class, and
  -- the protected rows of each value up to the cap.
  SELECT s.cls, s.sv, CASE WHEN s.p = 0 THEN s.n ELSE COALESCE(pv.x, 0) END AS t
  FROM :blk AS s
  JOIN parts AS p ON p.cls = s.cls
  LEFT JOIN partvals AS pv ON pv.cls = s.cls AND pv.sv = s.sv
  WHERE p.rk < (SELECT lim FROM budget)
)
SELECT lv.step, s.cls, s.sv, s.p, s.n, CAST(COALESCE(tk.t, 0) AS INT), :codes
FROM :blk AS s
CROSS JOIN :lv AS lv
LEFT JOIN takes AS tk ON tk.cls = s.cls AND tk.sv = s.sv
