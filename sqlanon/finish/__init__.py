"""Stage 7: run the rest of the query on the released rows, report, clean up."""
