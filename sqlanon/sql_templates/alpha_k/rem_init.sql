SELECT cell, n FROM :cells
