#!/usr/bin/env python3
"""Transcript (results/1xH200/trace-compute-only, baseline-ab.csv): the same traces analysed twice: the slowdown
against the compute-only steps they hold (as ob-analyze now reads them) and against the lone instances of each
kernel in the job's steps (as before: the compute-only steps set apart all the same). Prints per job the total added
time of each beside the job's target; writes --csv."""
import argparse
import pathlib

import pandas as pd

from overlap_bench import analyze, analyze_check, trace_read, trace_stats

parser = argparse.ArgumentParser()
parser.add_argument("folders", nargs="+", help="trace_job.py --out folders")
parser.add_argument("--csv", required=True)
args = parser.parse_args()
rows = []
for folder, job in [(pathlib.Path(f), j) for f in args.folders for j in pd.read_csv(pathlib.Path(f) / "trace_job.csv")
                    .itertuples()]:
    files = sorted(folder.glob(f"{job.label}.rank*.trace.json.gz"))
    traces = [t for f in files for t in trace_read.read(f)]
    row = {"label": job.label, "target_added_ms": job.step_ms - job.compute_ms, "target_lo_ms": job.target_lo_ms,
           "target_hi_ms": job.target_hi_ms}
    for basis in ("compute-only steps", "lone instances"):
        if basis == "lone instances":
            for t in traces:
                t.isolated, t.compute_only_idle = {}, float("nan")
        stats = [s for t in traces for s in trace_stats.step_stats(t)]
        trace_stats.peer_waits(traces, stats)
        summary = analyze.summary(stats, "pytorch-ddp", len(traces)).set_index("mode").loc["overlap"]
        tag = "compute_only" if basis != "lone instances" else "lone"
        row[f"total_{tag}_ms"] = summary["total_added_ms"]
        row[f"slowdown_{tag}_ms"] = summary["slowdown_ms"]
        row[f"verdict_{tag}"] = analyze_check.verdict(summary["total_added_ms"], row["target_added_ms"],
                                                      job.target_lo_ms, job.target_hi_ms)
    rows.append(row)
frame = pd.DataFrame(rows)
frame.to_csv(args.csv, index=False)
print(frame.round(3).to_string())
