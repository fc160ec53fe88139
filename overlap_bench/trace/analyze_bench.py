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
zlib_inflate_s, with its metadata. Several --gb sizes: a row each. Beside ob-analyze, in the same run on the same
file, Holistic Trace Analysis and TraceLens where a Python holding them is given (bench_others: each capped in time,
one line why where one cannot run; --others-from an earlier bench.csv: their columns taken from its rows of the same
bytes, not run again). --ranks N: the largest trace as N ranks of one job (its rank and world size set
in each copy), ob-analyze on all of them at once (one worker per core, trace_ranks), written to RANKS.csv beside
--csv, and what 10,000 such ranks would take, computed from those per-rank figures, to SCALE.csv.

Usage: ob-analyze-bench --gb 0.25 1 --gzip --hta-python PY --ranks 8 --csv results/cpu-2core/analyze-X/bench.csv
"""
import gzip
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import pandas as pd

from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool
from overlap_bench.trace import bench_others

# The bare parser (--parse-only) reads the whole file into memory: only below this size.
PARSE_ONLY_BYTES = 3 << 30
# The ranks the scale forecast is for (issue 82: what 10,000 ranks would take).
FORECAST_RANKS = 10_000

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
    """(wall s, CPU s of it and its children, peak resident MB of any of them) of a fresh process running `command`:
    its own resource usage (wait4), not that of every child this process ran before it."""
    start = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    seconds = time.monotonic() - start
    if child.returncode:
        raise OSError(f"{what} exited {child.returncode}: {err.decode(errors='replace').strip()[-300:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def native_rows(trace, scratch):
    """The native reader alone on the trace (CPU s), and the bare parser over the same bytes (s)."""
    from overlap_bench.trace import trace_native

    binary = trace_native.binary()
    if binary is None:
        return {"reader": "python", "reader_cpu_s": float("nan"), "parse_only_s": float("nan")}
    _, cpu, _ = timed([binary, str(trace), str(scratch / "columns.bin")], "ob_trace_columns")
    parse = float("nan")
    if trace.stat().st_size < PARSE_ONLY_BYTES:  # simdjson's DOM takes at most 4 GB, and holds all of it in memory
        done = subprocess.run([binary, "--parse-only", str(trace)], capture_output=True, text=True)
        found = json.loads(done.stdout) if done.returncode == 0 else {}
        parse = found.get("parse_cpu_s", found.get("parse_s", parse))  # its CPU time (wall where not told)
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


def measure(gb, args, scratch, rows):
    """One row: a trace of `gb` GB made and analysed, its reader and parser alone, gzipped, and the other tools."""
    trace = scratch / f"big{gb:g}.trace.json"
    scratch = scratch / f"size{gb:g}"  # this size's outputs
    scratch.mkdir()
    events, steps = synthesize(trace, gb * 1e9, args.source)
    reused = others_row(args.others_from, trace.stat().st_size) if args.others_from else None
    seconds, cpu, peak = timed([*ob_tool.module_command("trace.analyze"), str(trace), "--out",
                                str(scratch / f"a{gb:g}")], "ob-analyze")
    size = trace.stat().st_size
    row = {"trace_bytes": size, "events": events, "steps": steps, "seconds": seconds, "max_rss_mb": peak,
           "cpus": os.cpu_count(), "cpu_s": cpu, "mb_per_cpu_s": size / 1e6 / cpu}
    row.update(native_rows(trace, scratch))
    row["reader_over_parse"] = row["reader_cpu_s"] / row["parse_only_s"]
    row["analyze_over_parse"] = row["cpu_s"] / row["parse_only_s"]
    if args.gzip:
        row.update(gzip_rows(trace, scratch))
        (scratch / "big.trace.json.gz").unlink()
        row["gzip_over_zlib"] = row["gzip_cpu_s"] / row["zlib_inflate_s"]
        row["gzip_reader_over_zlib"] = row["gzip_reader_cpu_s"] / row["zlib_inflate_s"]
    for name, python in (("hta", args.hta_python), ("tracelens", args.tracelens_python)):
        if reused is not None:  # their run of an earlier bench on the same bytes, not run again
            row.update({key: reused[key] for key in reused.index if key.startswith(f"{name}_")
                        and not key.endswith("_over_analyze_cpu")})
        else:
            earlier = next((r for r in rows if bench_others.stopped(r, name)), None)
            skipped = (f"not run: it ran past {args.cap_s:g} s on the {earlier['trace_bytes'] / 1e9:.2f} GB trace"
                       if earlier else None)
            row.update(bench_others.run(name, python, trace, scratch, args.cap_s, skipped))
        if row[f"{name}_status"] == "ran":
            row[f"{name}_over_analyze_cpu"] = row[f"{name}_cpu_s"] / row["cpu_s"]
    return row, trace


def others_row(csv, size):
    """The row of an earlier bench.csv (--others-from) of a trace of exactly `size` bytes: the same synthesized trace,
    whose HTA and TraceLens columns are taken as they are. A usage error where it holds none."""
    frame = pd.read_csv(csv)
    found = frame[frame["trace_bytes"] == size]
    if found.empty or "hta_status" not in frame:
        raise ob_tool.UsageError(f"--others-from: '{csv}' holds no row with HTA's and TraceLens's columns for a trace "
                                 f"of {size} bytes")
    return found.iloc[0]


def rank_copies(trace, ranks, scratch):
    """`ranks` copies of `trace` as the ranks of one job: distributedInfo's rank and world size set in each (the
    header's numbers rewritten in place, one digit each), the events as they are."""
    head = trace.open("rb").read(1 << 16)
    copies = []
    for rank in range(ranks):
        patched = head.replace(b'"rank": 0', f'"rank": {rank}'.encode(), 1).replace(
            b'"world_size": 2', f'"world_size": {ranks}'.encode(), 1)
        if len(patched) != len(head):
            raise ob_tool.UsageError("--ranks: at most 9 (each rank's number one digit, written in place)")
        copy = scratch / f"rank{rank}.trace.json"
        with trace.open("rb") as source, copy.open("wb") as out:
            source.seek(len(head))
            out.write(patched)
            for block in iter(lambda: source.read(1 << 24), b""):
                out.write(block)
        copies.append(copy)
    return copies


def ranks_rows(trace, ranks, scratch):
    """The job of `ranks` ranks (rank_copies) analysed at once, and the forecast for FORECAST_RANKS from it."""
    copies = rank_copies(trace, ranks, scratch)
    seconds, cpu, peak = timed([*ob_tool.module_command("trace.analyze"), *map(str, copies), "--out",
                                str(scratch / "ranks")], "ob-analyze (ranks)")
    size = sum(c.stat().st_size for c in copies)
    for copy in copies:
        copy.unlink()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    job = {"ranks": ranks, "trace_bytes": size, "seconds": seconds, "cpu_s": cpu, "max_rss_mb": peak,
           "cores": cores, "cpu_s_per_rank": cpu / ranks, "mb_per_cpu_s": size / 1e6 / cpu}
    per_rank = cpu / ranks
    core_s = per_rank * FORECAST_RANKS
    forecast = {"ranks": FORECAST_RANKS, "gb_per_rank": size / ranks / 1e9, "cpu_s_per_rank": per_rank,
                "core_hours": core_s / 3600, f"hours_on_{cores}_cores": core_s / cores / 3600,
                "machines_for_10_min": math.ceil(core_s / cores / 600), "worker_peak_mb": peak,
                "measured_ranks": ranks}
    return job, forecast


def parse_args():
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("--gb", type=ob_tool.number_in(0.001, 16), nargs="+", default=[1.0],
                        help="the traces' sizes in GB (default: 1)")
    parser.add_argument("--csv", required=True, type=ob_tool.output_file(".csv"), help="the table to write")
    parser.add_argument("--source", default=str(SOURCE), type=ob_tool.input_file,
                        help="the profiler trace to repeat (default: the one the package ships, %(default)s)")
    parser.add_argument("--gzip", action="store_true", help="also the trace gzipped: ob-analyze on it and zlib's own "
                        "time to inflate it")
    parser.add_argument("--hta-python", type=ob_tool.executable,
                        help="a Python with HolisticTraceAnalysis installed: HTA on the same traces")
    parser.add_argument("--tracelens-python", type=ob_tool.executable,
                        help="a Python with TraceLens installed: TraceLens on the same traces")
    parser.add_argument("--others-from", type=ob_tool.input_file,
                        help="an earlier bench.csv of the same --source and sizes: HTA's and TraceLens's columns "
                        "taken from its rows of the same bytes, not run again")
    parser.add_argument("--cap-s", type=ob_tool.number_in(1, 86400), default=300.0,
                        help="the other tools' time cap, seconds (default: 300)")
    parser.add_argument("--ranks", type=ob_tool.whole(2, 9), default=0, help="the largest trace as this many ranks of "
                        "one job, analysed at once (2 to 9; default: none)")
    args = parser.parse_args()
    try:
        ob_tool.require_input(args.source, "--source")
    except ob_tool.UsageError as error:
        parser.error(str(error))
    if args.others_from:
        try:
            columns = set(pd.read_csv(args.others_from, nrows=0))
        except ValueError:  # not a CSV (pandas' parser errors and a bad encoding are ValueErrors)
            columns = set()
        if not {"hta_status", "tracelens_status"} <= columns:
            parser.error(f"--others-from: '{args.others_from}' is invalid: a bench.csv with HTA's and TraceLens's "
                         "columns")
    outputs = [("--csv", args.csv), ("--csv (its metadata)", ob_csv.meta_path(args.csv))]
    if args.ranks:
        outputs += [("--csv (the ranks)", sibling(args.csv, "ranks")), ("--csv (the forecast)",
                                                                        sibling(args.csv, "scale"))]
    ob_tool.require_outputs(outputs)
    return args


def sibling(csv, name):
    """RANKS.csv or SCALE.csv beside --csv: bench.csv -> bench.ranks.csv."""
    path = pathlib.Path(csv)
    return path.with_name(f"{path.stem}.{name}{path.suffix}")


def main():
    args = parse_args()
    rows, extra = [], {}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        for gb in sorted(args.gb):
            row, trace = measure(gb, args, scratch, rows)
            rows.append(row)
            print(summary_line(row), flush=True)
            if gb != max(args.gb):
                trace.unlink()
        if args.ranks:
            job, forecast = ranks_rows(trace, args.ranks, scratch)
            extra = {"ranks": job, "scale": forecast}
            print(f"ob-analyze read {args.ranks} ranks of {job['trace_bytes'] / args.ranks / 1e9:.2f} GB in "
                  f"{job['seconds']:.1f} s ({job['cpu_s']:.1f} s of CPU), at most {job['max_rss_mb']:.0f} MB a process")
    meta = {"suite": "overlap-bench", "tool": "ob-analyze-bench", "commit": ob_tool.commit_id(),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command_line": sys.argv,
            "source": pathlib.Path(args.source).name, "load_average": os.getloadavg()}
    for name, table in extra.items():
        ob_tool.write_text_atomic(sibling(args.csv, name), pd.DataFrame([table]).to_csv(index=False))
    ob_tool.write_text_atomic(ob_csv.meta_path(args.csv), json.dumps(meta, indent=2) + "\n")
    ob_tool.write_text_atomic(args.csv, pd.DataFrame(rows).to_csv(index=False))
    return 0


def summary_line(row):
    return (f"ob-analyze read a trace of {row['trace_bytes'] / 1e9:.2f} GB ({row['events']} events, {row['steps']} "
            f"steps) in {row['seconds']:.1f} s ({row['cpu_s']:.1f} s of CPU: {row['mb_per_cpu_s']:.0f} MB/s per "
            f"core), at most {row['max_rss_mb']:.0f} MB resident; its reader ({row['reader']}) "
            + (f"{row['reader_cpu_s']:.2f} s of CPU, the bare parser {row['parse_only_s']:.2f} s"
               if row["reader"] == "native" else "in Python (ob_trace_columns not built)")
            + (f"; gzipped {row['gzip_cpu_s']:.1f} s of CPU, zlib alone {row['zlib_inflate_s']:.1f} s"
               if "gzip_cpu_s" in row else "")
            + "".join(f"; {name} {row[f'{name}_status']}" + (f" in {row[f'{name}_seconds']:.0f} s"
                                                               if row[f"{name}_status"] == "ran" else "")
                      for name in ("hta", "tracelens")))


def cli():
    """The console command ob-analyze-bench (pyproject.toml) and `python3 analyze_bench.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
