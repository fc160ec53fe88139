#!/usr/bin/env python3
"""ob-analyze-bench: how long ob-analyze takes on a large trace, and how much memory: a trace of --gb gigabytes made
by repeating a shipped PyTorch profiler trace (its steps renumbered and moved later in time, its launch ids made
unique), then ob-analyze run on it as a fresh process, its wall time and peak resident memory measured
(getrusage). Writes --csv: trace_bytes, events, steps, seconds, max_rss_mb, cpus, with its metadata.

Usage: ob-analyze-bench --gb 1 --csv results/cpu-2core/analyze-1gb/bench.csv
"""
import gzip
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

import pandas as pd

from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool

# A PyTorch DDP trace of phase 4's MLP on two H200s (rank 0), shipped with the package (tests/data/traces/2gpu too).
SOURCE = pathlib.Path(__file__).with_name("data") / "ddp-1024x8x256-25mb.rank0.trace.json.gz"


def synthesize(path, size, source=SOURCE):
    """A trace of at least `size` bytes: `source`'s events again and again, each copy later in time. Returns the
    events and steps written."""
    trace = json.loads(gzip.open(source).read())
    events = trace.pop("traceEvents")
    starts = [e["ts"] for e in events if "ts" in e]
    span = max(e.get("ts", 0) + e.get("dur", 0) for e in events) - min(starts)
    written = steps = copy = 0
    with open(path, "w") as out:
        out.write(json.dumps(trace)[:-1] + ', "traceEvents": [\n')
        while out.tell() < size:
            for event in events:
                moved = dict(event, ts=event["ts"] + copy * span * 1.1) if "ts" in event else dict(event)
                if "correlation" in (moved.get("args") or {}):
                    moved["args"] = dict(moved["args"], correlation=moved["args"]["correlation"] + copy * 10 ** 7)
                if moved.get("name", "").startswith("ProfilerStep#") and moved.get("cat") == "user_annotation":
                    moved["name"] = f"ProfilerStep#{copy * 100 + int(moved['name'].split('#')[1])}"
                    steps += 1
                out.write(("" if written == 0 else ",\n") + json.dumps(moved))
                written += 1
            copy += 1
        out.write("\n]}\n")
    return written, steps


def main():
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("--gb", type=float, default=1.0, help="the trace's size in GB (default: 1)")
    parser.add_argument("--csv", required=True, help="the table to write")
    parser.add_argument("--source", default=str(SOURCE), help="the profiler trace to repeat (default: the one the "
                        "package ships, %(default)s)")
    args = parser.parse_args()
    try:
        ob_tool.require_input(args.source, "--source")
    except ob_tool.UsageError as error:
        parser.error(str(error))
    if not 0.001 <= args.gb <= 16:
        parser.error(f"--gb: '{args.gb}' is invalid: 0.001 to 16")
    ob_tool.require_outputs([("--csv", args.csv), ("--csv (its metadata)", ob_csv.meta_path(args.csv))])
    with tempfile.TemporaryDirectory() as scratch:
        trace = pathlib.Path(scratch) / "big.trace.json"
        events, steps = synthesize(trace, args.gb * 1e9, args.source)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.monotonic()
        done = subprocess.run([*ob_tool.module_command("trace.analyze"), str(trace), "--out",
                               str(pathlib.Path(scratch) / "a")], capture_output=True, text=True)
        seconds = time.monotonic() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        if done.returncode:
            raise OSError(f"ob-analyze exited {done.returncode}: {done.stderr.strip()[-300:]}")
        row = {"trace_bytes": trace.stat().st_size, "events": events, "steps": steps, "seconds": seconds,
               "max_rss_mb": max(peak, before) / 1024, "cpus": os.cpu_count()}
    meta = {"suite": "overlap-bench", "tool": "ob-analyze-bench", "commit": ob_tool.commit_id(),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command_line": sys.argv,
            "source": pathlib.Path(args.source).name, "load_average": os.getloadavg()}
    ob_tool.write_text_atomic(ob_csv.meta_path(args.csv), json.dumps(meta, indent=2) + "\n")
    ob_tool.write_text_atomic(args.csv, pd.DataFrame([row]).to_csv(index=False))
    print(f"ob-analyze read a trace of {row['trace_bytes'] / 1e9:.2f} GB ({events} events, {steps} steps) in "
          f"{seconds:.1f} s, at most {row['max_rss_mb']:.0f} MB resident, on {row['cpus']} cores")
    return 0


def cli():
    """The console command ob-analyze-bench (pyproject.toml) and `python3 analyze_bench.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
