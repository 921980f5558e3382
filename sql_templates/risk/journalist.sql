-- Each class of the measured table beside the size of the same class in a population table (ARX's
-- research subset and its population): classes matched on every quasi-identifier, NULL equal to
-- NULL. Only (size, size in the population, number of classes) triples leave the database; a
-- class the population lacks comes back with a NULL population size.
SELECT s.size AS size, p.size AS population_size, COUNT(*) AS classes
FROM (
  SELECT :sample_keys, COUNT(*) AS size
  FROM :sample AS r
  GROUP BY :sample_group
) AS s
LEFT JOIN (
  SELECT :population_keys, COUNT(*) AS size
  FROM :population AS r
  GROUP BY :population_group
) AS p
  ON :matched
GROUP BY s.size, p.size
