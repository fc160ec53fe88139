#!/usr/bin/env python3
"""ob-analyze-bench's results held against issue 82's targets: reads a published folder's bench.csv
(ob-analyze-bench --gb ... --gzip), a RANKS.csv of --ranks N (bench.ranks.csv, or that of a run of its own) and,
where present, bench4gb.csv (a 4 GB trace alone), and writes targets.csv: one row per target, its measured figure,
its bound, the ratio of one to the other and whether it is met; so that a README quotes no figure by hand.

Usage: python3 -m overlap_bench.trace.bench_targets results/cpu-2core/analyze-X
"""
import math
import pathlib
import sys

import pandas as pd

from overlap_bench.core import ob_tool

GB = 1e9


def row_of(frame, gb):
    """The row of the trace nearest `gb` GB, or None."""
    if frame is None or frame.empty:
        return None
    return frame.iloc[(frame["trace_bytes"] - gb * GB).abs().argmin()]


def targets(folder):
    folder = pathlib.Path(folder)
    bench = pd.read_csv(folder / "bench.csv")
    found = sorted(folder.glob("*.ranks.csv"))  # bench.ranks.csv, or that of a run of its own (--ranks)
    ranks = pd.read_csv(found[0]) if found else None
    big = pd.read_csv(folder / "bench4gb.csv") if (folder / "bench4gb.csv").exists() else None
    one, small, four = row_of(bench, 1), row_of(bench, 0.25), row_of(big, 4)
    rows = [("1 GB one rank: CPU s on one core", one["cpu_s"], 4.0),
            ("1 GB one rank: the reader alone, CPU s", one["reader_cpu_s"], 4.0),
            ("gzip: ob-analyze's CPU over zlib's inflate", one.get("gzip_over_zlib", math.nan), 2.0),
            ("gzip: the reader's CPU over zlib's inflate", one.get("gzip_reader_over_zlib", math.nan), 2.0),
            ("peak memory at 1 GB, MB", one["max_rss_mb"], 512.0),
            ("peak memory at 4 GB, MB", four["max_rss_mb"] if four is not None else math.nan, 512.0),
            ("the suite's CPU over the bare parser, 1 GB", one["analyze_over_parse"], 3.0),
            ("the reader's CPU over the bare parser, 1 GB", one["reader_over_parse"], 3.0)]
    if ranks is not None:
        job = ranks.iloc[0]
        rows.append((f"{int(job['ranks'])} ranks x 1 GB: wall s on {int(job['cores'])} cores", job["seconds"], 20.0))
        if "cpu_s" in job:  # what the wall would be were the cores the job's alone: its CPU time over them
            rows.append((f"{int(job['ranks'])} ranks x 1 GB: CPU s over {int(job['cores'])} cores (the least wall "
                         "free cores allow)", job["cpu_s"] / job["cores"], math.nan))
    for name in ("hta", "tracelens"):
        for label, row in (("250 MB", small), ("1 GB", one)):
            status = str(row.get(f"{name}_status", "")) if row is not None else ""
            if status == "ran" or status.startswith(">"):
                least = "" if status == "ran" else ", at least (stopped at its cap)"
                rows.append((f"{name} at {label}: its CPU over ob-analyze's (higher: ob-analyze faster){least}",
                             row[f"{name}_cpu_s"] / row["cpu_s"], math.nan))
                rows.append((f"{name} at {label}: its peak memory over ob-analyze's{least}",
                             row[f"{name}_max_rss_mb"] / row["max_rss_mb"], math.nan))
    frame = pd.DataFrame(rows, columns=["target", "measured", "bound"])
    frame["measured_over_bound"] = frame["measured"] / frame["bound"]
    frame["met"] = [("yes" if m <= b else "no") if not (math.isnan(m) or math.isnan(b)) else "-"
                    for m, b in zip(frame["measured"], frame["bound"])]
    return frame


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or not (pathlib.Path(argv[0]) / "bench.csv").is_file():
        raise ob_tool.UsageError("FOLDER: a folder holding ob-analyze-bench's bench.csv")
    frame = targets(argv[0])
    ob_tool.write_text_atomic(pathlib.Path(argv[0]) / "targets.csv", frame.to_csv(index=False))
    print(frame.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(ob_tool.main_guard(main))
