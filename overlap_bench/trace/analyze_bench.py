#!/usr/bin/env python3
"""ob-analyze-bench: how long ob-analyze takes on a large trace, and how much memory: a trace of --gb gigabytes made
by repeating a shipped PyTorch profiler trace (its steps renumbered and moved later in time, its launch ids made
unique), then ob-analyze run on it as a fresh process, its wall time and peak resident memory measured
(getrusage), with its CPU time (user and system, every process it ran) and MB/s per core (the trace's bytes over that
CPU time: on a loaded machine the wall time waits, the CPU time does not). Beside it, on the same bytes: the native
reader alone (ob_trace_columns, trace_reader/), the bare parser (simdjson over the whole file, nothing kept:
--parse-only), and with --gzip the same trace gzipped: ob-analyze on it, and zlib's own time to inflate it (Python's
zlib, the same library, in chunks). Writes --csv: trace_bytes, events, steps, seconds, max_rss_mb, cpus, cpu_s,
mb_per_cpu_s, reader, reader_cpu_s, parse_only_s, and with --gzip gzip_bytes, gzip_seconds, gzip_cpu_s,
zlib_inflate_s, with its metadata.

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


def timed(command, what):
    """(wall s, CPU s of it and its children, peak resident MB of any of them) of a fresh process running `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise OSError(f"{what} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu, max(after.ru_maxrss, before.ru_maxrss) / 1024


def native_rows(trace, scratch):
    """The native reader alone on the trace (CPU s), and the bare parser over the same bytes (s)."""
    from overlap_bench.trace import trace_native

    binary = trace_native.binary()
    if binary is None:
        return {"reader": "python", "reader_cpu_s": float("nan"), "parse_only_s": float("nan")}
    _, cpu, _ = timed([binary, str(trace), str(scratch / "columns.bin")], "ob_trace_columns")
    done = subprocess.run([binary, "--parse-only", str(trace)], capture_output=True, text=True)
    parse = json.loads(done.stdout)["parse_s"] if done.returncode == 0 else float("nan")
    return {"reader": "native", "reader_cpu_s": cpu, "parse_only_s": parse}


def gzip_rows(trace, scratch):
    """The trace gzipped (level 6, zlib's default): ob-analyze on it, and zlib's own time to inflate it in chunks."""
    import zlib

    packed = scratch / "big.trace.json.gz"
    with open(trace, "rb") as source, gzip.open(packed, "wb", compresslevel=6) as out:
        for block in iter(lambda: source.read(1 << 24), b""):
            out.write(block)
    start = time.process_time()
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    with open(packed, "rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            inflate.decompress(block)
    zlib_s = time.process_time() - start
    seconds, cpu, _ = timed([*ob_tool.module_command("trace.analyze"), str(packed), "--out", str(scratch / "g")],
                            "ob-analyze (gzip)")
    from overlap_bench.trace import trace_native

    binary = trace_native.binary()
    reader = timed([binary, str(packed), str(scratch / "columns.gz.bin")], "ob_trace_columns")[1] if binary else \
        float("nan")
    return {"gzip_bytes": packed.stat().st_size, "gzip_seconds": seconds, "gzip_cpu_s": cpu,
            "gzip_reader_cpu_s": reader, "zlib_inflate_s": zlib_s}


def main():
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("--gb", type=float, default=1.0, help="the trace's size in GB (default: 1)")
    parser.add_argument("--csv", required=True, help="the table to write")
    parser.add_argument("--source", default=str(SOURCE), help="the profiler trace to repeat (default: the one the "
                        "package ships, %(default)s)")
    parser.add_argument("--gzip", action="store_true", help="also the trace gzipped: ob-analyze on it and zlib's own "
                        "time to inflate it")
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
        seconds, cpu, peak = timed([*ob_tool.module_command("trace.analyze"), str(trace), "--out",
                                    str(pathlib.Path(scratch) / "a")], "ob-analyze")
        size = trace.stat().st_size
        row = {"trace_bytes": size, "events": events, "steps": steps, "seconds": seconds, "max_rss_mb": peak,
               "cpus": os.cpu_count(), "cpu_s": cpu, "mb_per_cpu_s": size / 1e6 / cpu}
        row.update(native_rows(trace, pathlib.Path(scratch)))
        if args.gzip:
            row.update(gzip_rows(trace, pathlib.Path(scratch)))
    meta = {"suite": "overlap-bench", "tool": "ob-analyze-bench", "commit": ob_tool.commit_id(),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command_line": sys.argv,
            "source": pathlib.Path(args.source).name, "load_average": os.getloadavg()}
    ob_tool.write_text_atomic(ob_csv.meta_path(args.csv), json.dumps(meta, indent=2) + "\n")
    ob_tool.write_text_atomic(args.csv, pd.DataFrame([row]).to_csv(index=False))
    print(f"ob-analyze read a trace of {row['trace_bytes'] / 1e9:.2f} GB ({events} events, {steps} steps) in "
          f"{seconds:.1f} s ({row['cpu_s']:.1f} s of CPU: {row['mb_per_cpu_s']:.0f} MB/s per core), at most "
          f"{row['max_rss_mb']:.0f} MB resident, on {row['cpus']} cores; its reader ({row['reader']}) "
          + (f"{row['reader_cpu_s']:.2f} s of CPU, the bare parser {row['parse_only_s']:.2f} s"
             if row["reader"] == "native" else "in Python (ob_trace_columns not built)")
          + (f"; gzipped ({row['gzip_bytes'] / 1e6:.0f} MB) {row['gzip_seconds']:.1f} s ({row['gzip_cpu_s']:.1f} s of "
             f"CPU), zlib alone inflates it in {row['zlib_inflate_s']:.1f} s" if args.gzip else ""))
    return 0


def cli():
    """The console command ob-analyze-bench (pyproject.toml) and `python3 analyze_bench.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
