-- The selection's frequency table over the attributes slicing groups (a_0, a_1, …): what the
-- association of attribute pairs and the column groups' k are measured on.
SELECT :attributes, COUNT(*) AS cnt
FROM :src AS s
GROUP BY :grouped
