-- The selection's frequency table over the attributes slicing groups (a_0, a_1, …, text byte
-- for byte), with the quasi-identifiers' stored values (:raw, raw_0, raw_1, …; grouped by too, or, where
-- Backend.fewer_group_keys, taken once per line: its text byte for byte fixes it) and the rows of
-- each (n): what the association of attribute pairs, the column groups' k and the order of the
-- quasi-identifiers (anonymize/order.py) are measured on, and what verification reads the
-- selection's distribution from (Release.counts).
SELECT :attributes, :raw, COUNT(*) AS n
FROM :src AS s
GROUP BY :grouped
