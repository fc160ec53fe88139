#!/usr/bin/env python3
"""Transcript (results/1xH200/trace-compute-only, tally.csv): per call (R2 the folder's own baseline-ab.csv, R3
r3/'s) and baseline, how many of the traced jobs' total added times stand within 10 % of their target, inside its
interval, or off."""
import pathlib
import sys

import pandas as pd

folder = pathlib.Path(sys.argv[1])
rows = []
for call, path in (("R2", folder / "baseline-ab.csv"), ("R3", folder / "r3" / "baseline-ab.csv")):
    frame = pd.read_csv(path)
    for basis in ("compute_only", "lone"):
        found = frame[f"verdict_{basis}"].value_counts()
        rows.append({"call": call, "baseline": basis.replace("_", "-"), "jobs": len(frame),
                     "within_10_pct": int(found.get("within 10 %", 0)),
                     "inside_interval": int(found.get("inside the target's interval", 0)),
                     "off": int(found.get("off", 0))})
pd.DataFrame(rows).to_csv(folder / "tally.csv", index=False)
print(pd.DataFrame(rows).to_string(index=False))
