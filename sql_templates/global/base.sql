-- The selection's frequency table reduced to what the lattice search reads: every level's
-- label code of every quasi-identifier (:codes, c_<qi>_<level>), the sensitive value's code
-- where l-diversity or α needs it (:sv), whether α protects it (:p), and the rows n. Every node of the lattice is one GROUP BY
-- over this table (global/node.sql), never a pass over the rows.
SELECT :codes, :sv, :p, SUM(n) AS n
FROM :cells
GROUP BY :codes_group, :sv_group
