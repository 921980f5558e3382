INSERT INTO :assign
SELECT cell, take, :step, :levels FROM :takes WHERE take > 0
