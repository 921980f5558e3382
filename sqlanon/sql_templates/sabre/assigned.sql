-- The rows with their class for the chosen number of classes.
SELECT s.*, :cls AS _sa_cls
FROM :ranked AS s
