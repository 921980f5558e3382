-- The selection's frequency table over the attributes slicing groups (a_0, a_1, …, text byte
-- for byte), with the quasi-identifiers' stored values (:raw, r_0, r_1, …): what the association
-- of attribute pairs, the column groups' k and the order of the quasi-identifiers
-- (anonymize/order.py) are measured on.
SELECT :attributes, :raw, COUNT(*) AS cnt
FROM :src AS s
GROUP BY :grouped
