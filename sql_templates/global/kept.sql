-- The cells of the classes the chosen node keeps (:keep, joined on the node's codes, :match),
-- each with its key k and its labels at the node's levels (:labels, label_<qi>): a table of its
-- own, so that the release joins the rows to it by the key alone (SQLite indexes it for the
-- join; joined as a subquery it scanned the cells once per row).
SELECT f.k, :labels
FROM :cells AS f
JOIN :keep AS c ON :match
