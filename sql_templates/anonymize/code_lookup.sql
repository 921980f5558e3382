-- Dense integer codes of one column of the cells (NULL gets code 0 where it is joined): a sort
-- of its few distinct values, not of the wide cell rows.
SELECT v, ROW_NUMBER() OVER (ORDER BY v) AS code
FROM (SELECT DISTINCT :g AS v FROM :cells) AS d
WHERE v IS NOT NULL
