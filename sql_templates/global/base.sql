-- The selection's frequency table reduced to what the lattice search reads: every level's
-- label code of every quasi-identifier (:codes, c_<qi>_<level>), the sensitive value's code
-- where l-diversity needs it (:sv), and the rows n. Every node of the lattice is one GROUP BY
-- over this table (global/node.sql), never a pass over the rows.
SELECT :codes, :sv, SUM(n) AS n
FROM :cells
GROUP BY :codes_group, :sv_group
