#!/usr/bin/env python3
"""Transcript (results/1xH200/trace-part, tally.csv): per job kind of the bench's trace part (its counts-<job>.csv,
from ob-analyze-check), how many jobs stand within 10 % of their own added time, inside its interval, or off, and
how many within 10 % of the trace's own added time (measure `traced`).
Usage: tally.py FOLDER"""
import pathlib
import sys

import pandas as pd

folder = pathlib.Path(sys.argv[1])
rows = []
for job in ("graph", "gpt2-xl", "eager", "fsdp2", "fsdp2-gpu"):
    counts = pd.read_csv(folder / f"counts-{job}.csv").set_index("measure")
    rows.append({"job": job, **counts.loc["total"].to_dict(),
                 "traced_within_10_pct": int(counts.loc["traced", "within_10_pct"])})
table = pd.DataFrame(rows)
table.to_csv(folder / "tally.csv", index=False)
print(table.to_string(index=False))
