"""Reports and figures from the suite's CSVs: the report, the verdict in words, and one plot module per figure."""
