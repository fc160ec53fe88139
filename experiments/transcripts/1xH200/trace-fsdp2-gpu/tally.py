#!/usr/bin/env python3
"""Transcript (results/1xH200/trace-fsdp2-gpu, tally.csv): per call, profile and jobs (the six configurations, or
gpt2-xl), how many of FSDP2's traced jobs stand within 10 % of the job's own added time (unprofiled step minus
compute-only step), inside its interval, or off, and how many within 10 % of the traced step's own (`error_traced`:
what the analysis misses apart from what the profiler did to the step).
Usage: tally.py FOLDER"""
import pathlib
import sys

import pandas as pd

from overlap_bench import analyze_check

folder = pathlib.Path(sys.argv[1])
CHECKS = [("U", "gpu", "check-gpu.csv"), ("U", "light", "check-light.csv"), ("V", "gpu", "v/check-fsdp2-gpu.csv"),
          ("W", "gpu", "v/check-fsdp2-gpu-gpt2-xl.csv"), ("W", "light", "v/check-fsdp2-gpt2-xl.csv")]
CHECKS += [(f"X{r}", p, f"x/check-r{r}-{p}{xl}.csv")
           for r in (1, 2) for p in ("light", "gpu") for xl in ("", "-gpt2-xl")]
rows = []
for call, profile, name in CHECKS:
    counts = analyze_check.counts(pd.read_csv(folder / name)).set_index("measure")  # per job, as ob-analyze-check
    rows.append({"call": call, "profile": profile, "jobs": "gpt2-xl" if "gpt2-xl" in name else "six",
                 "count": int(counts.loc["total", "jobs"]),
                 **{k: int(counts.loc["total", k]) for k in ("within_10_pct", "inside_interval", "off")},
                 "traced_within_10_pct": int(counts.loc["traced", "within_10_pct"])})
table = pd.DataFrame(rows).sort_values(["jobs", "profile", "call"], ascending=[False, True, True])
table.to_csv(folder / "tally.csv", index=False)
print(table.to_string(index=False))
