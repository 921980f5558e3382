-- The lines of the order's runs (slicing/runs.sql) as one candidate bucketing sees them: the
-- bucket of a line's first row (:first, f) and of its last row (:last, t).
SELECT u.*, :first AS f, :last AS t FROM :runs AS u
