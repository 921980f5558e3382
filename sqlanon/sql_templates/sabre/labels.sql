-- Each class's released QI values (:labels, :levels over its cells, from :segments) and rows.
WITH seg AS (:segments)
SELECT s.cls, :labels, :levels, SUM(s.width) AS n
FROM seg AS s
JOIN :codes AS o ON o.cell = s.cell
JOIN :cells AS f ON f.cell = s.cell
GROUP BY s.cls
