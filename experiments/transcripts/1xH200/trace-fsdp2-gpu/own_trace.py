#!/usr/bin/env python3
"""Transcript (results/1xH200/trace-fsdp2-gpu, own-trace.csv): ob-analyze on each phase 4 run's timeline CSV and on
the Chrome trace the binary wrote beside it (both made by call U; neither kept): the same figures from either.
Usage: own_trace.py FOLDER_OF_RUNS OUT_CSV"""
import pathlib
import subprocess
import sys
import tempfile

import pandas as pd

rows = []
for timeline in sorted(pathlib.Path(sys.argv[1]).glob("*.timeline.csv")):
    for source in (timeline, timeline.with_name(timeline.name.replace(".csv", ".trace.json"))):
        with tempfile.TemporaryDirectory() as scratch:
            subprocess.run([sys.executable, "-m", "overlap_bench.analyze", str(source), "--out", f"{scratch}/a"],
                           check=True, capture_output=True)
            row = pd.read_csv(f"{scratch}/a/analysis.csv").set_index("mode").loc["overlap"]
        label = timeline.name.replace(".timeline.csv", "")
        rows.append({"label": label, "source": source.name[len(label) + 1:],
                     "steps": int(row["iters"]), "step_ms": row["time_ms_p50"], "overlap_pct": row["overlap_pct"],
                     "slowdown_ms": row["slowdown_ms"], "total_added_ms": row["total_added_ms"]})
pd.DataFrame(rows).to_csv(sys.argv[2], index=False)
print(pd.DataFrame(rows).to_string(index=False))
