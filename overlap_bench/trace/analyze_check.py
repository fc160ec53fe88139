#!/usr/bin/env python3
"""ob-analyze-check: ob-analyze held against what the traced job measured without the profiler, and beside
Holistic Trace Analysis: for every job a trace_job.py folder holds (its trace_job.csv and one trace per rank), and
every phase 4 run in the folder (its summary and its own timeline, no profiler), the analyzer's added time (exposed
communication + compute slowdown, median traced step) against the job's own step minus its compute-only step
(unprofiled, same processes), and per rank its share of communication hidden beside HTA's get_comm_comp_overlap
(where the HolisticTraceAnalysis package is installed and the job's traces are the profiler's; empty otherwise).

Writes --csv: label, system, ranks, rank, traced_step_ms, step_ms, compute_ms, target_added_ms, added_ms, error
(added / target - 1), exposed_comm_ms, slowdown_ms, peer_wait_ms (of the exposed communication, the wait for a later
rank), error_without_wait ((added - peer_wait) / target - 1), host_comm_ms (the wrapper's host calls while the GPU
ran nothing), wrapper_gpu_ms (its own kernels where no other ran), idle_added_ms (the GPU's idle time beyond the
compute-only steps' a trace holds), total_added_ms (added + wrapper_gpu + host_comm + idle_added),
error_total (total_added / target - 1), target_lo_ms and target_hi_ms (the target's 95 % interval where
trace_job.py or phase 4 measured it), verdict ("within 10 %", "inside the target's interval", or "off") and
verdict_added (the same for added_ms), overlap_pct, hta_overlap_pct. With --counts, per measure (added, total)
the jobs of each verdict.

Usage: ob-analyze-check results/runs/traces --csv check.csv
"""
import argparse
import contextlib
import importlib.util
import io
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types

import numpy as np
import pandas as pd

from overlap_bench.trace import analyze
from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool
from overlap_bench.core import packs
from overlap_bench.core.arguments import Kind


HTA_SECONDS = 180  # HTA's own analysis of one job's traces, in a process of its own (its pool can hang)
HTA_SCRIPT = """import contextlib, io, json, sys
with contextlib.redirect_stdout(io.StringIO()):  # HTA's own printing; its errors stay on stderr
    from hta.trace_analysis import TraceAnalysis
    table = TraceAnalysis(trace_dir=sys.argv[1]).get_comm_comp_overlap(visualize=False)
print(json.dumps({str(int(r)): float(v) for r, v in zip(table["rank"], table["comp_comm_overlap_pctg"])}))
"""


def hta_overlap(files, seconds=HTA_SECONDS):
    """rank -> HTA's comp_comm_overlap_pctg for these trace files, or {} without the package. HTA runs in a process
    of its own, the parent's module path its; where it fails on them (HTA 0.5.0 under pandas 3: a TypeError in its
    own parsing) or gives no answer within `seconds` (its worker pool, seen hanging on a loaded machine), one line
    says so and the column stays empty: our own check goes on."""
    if importlib.util.find_spec("hta") is None:
        return {}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with tempfile.TemporaryDirectory() as folder:
        for path in files:
            shutil.copy(path, folder)
        with subprocess.Popen([sys.executable, "-c", HTA_SCRIPT, folder], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, start_new_session=True) as child:
            try:
                out, err = child.communicate(timeout=seconds)
                failure = None if child.returncode == 0 else \
                    (err.strip().splitlines() or [f"exit status {child.returncode}"])[-1][:160]
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)  # HTA's pool workers with it
                child.communicate()
                failure = f"no answer within {seconds:g} s"
    if failure:
        print(f"ob-analyze-check: HTA failed on {pathlib.Path(files[0]).name} and its ranks ({failure}): "
              "hta_overlap_pct left empty", file=sys.stderr)
        return {}
    return {int(rank): value for rank, value in json.loads(out.strip().splitlines()[-1]).items()}


def verdict(total, target, lo, hi):
    """Whether the analysis' total added time stands with the job's own: within 10 % of the target, else inside the
    target's interval (a target its measurement does not resolve that finely), else off."""
    if abs(total / target - 1) <= 0.10:
        return "within 10 %"
    return "inside the target's interval" if lo <= total <= hi else "off"


JOB_COLUMNS = ("label", "system", "ranks", "step_ms", "compute_ms")  # what trace_job.csv must hold


def traced_jobs(folder):
    """(job, its files) of a trace_job.py folder: each job's row of trace_job.csv and its one trace per rank; where
    its compute-only steps are in traces of their own (--profile gpu), those as the job's `compute_only`."""
    path = folder / "trace_job.csv"
    jobs = packs.read_csv(path, "FOLDER", JOB_COLUMNS, most=16 << 20)
    ob_csv.require_ranges(path, jobs, {"ranks": (1, 1 << 16, True), "step_ms": (1e-6, 1e9, False),
                                       "compute_ms": (1e-6, 1e9, False)})
    for job in jobs.itertuples():
        if not re.fullmatch(r"[A-Za-z0-9_+=-][A-Za-z0-9._+=-]*", str(job.label)):
            raise ob_tool.UsageError(f"{path}: row {job.Index + 1}: label '{job.label}' is invalid: a plain "
                                     "file-name prefix (its traces lie in the folder)")
        if job.compute_ms >= job.step_ms:
            raise ob_tool.UsageError(f"{path}: row {job.Index + 1}: compute_ms {job.compute_ms:g} is not below "
                                     f"step_ms {job.step_ms:g} (the added time must be positive)")
    for job in jobs.itertuples():
        files = sorted(folder.glob(f"{job.label}.rank*.trace.json*"))
        alone = sorted(folder.glob(f"{job.label}.compute-only.rank*.trace.json*"))
        if len(files) != job.ranks or len(alone) not in (0, job.ranks):
            raise ob_tool.UsageError(f"{folder}: {job.label} has {len(files)} rank traces and {len(alone)} "
                                     f"compute-only ones, {job.ranks} expected")
        yield {**job._asdict(), "compute_only": alone}, files


def phase4_jobs(folder):
    """(job, its files) of every phase 4 run in the folder (a summary with its timeline beside it): its own
    overlapped and compute-only steps (medians of the same process, no profiler) and the target's interval from
    their medians' intervals (half-widths added in quadrature); the timeline is its trace."""
    for timeline in sorted(folder.glob("*.timeline.csv")):
        path = timeline.with_name(timeline.name.replace(".timeline.csv", ".csv"))
        if not path.is_file():
            continue
        frame = ob_csv.load_summary(path)
        if set(frame["phase"]) != {"phase4"} or not {"overlap", "compute"} <= set(frame["mode"]):
            continue
        modes = frame.groupby("mode").first()
        step, compute = modes.loc["overlap", "time_ms_p50"], modes.loc["compute", "time_ms_p50"]
        ci = modes["time_ms_p50_ci_rel"] if "time_ms_p50_ci_rel" in modes else {"overlap": np.nan, "compute": np.nan}
        half = float(np.hypot(step * ci["overlap"], compute * ci["compute"]))
        yield ({"label": path.stem, "system": "overlap-bench", "ranks": int(modes.loc["overlap", "ranks"]),
                "step_ms": step, "compute_ms": compute, "target_lo_ms": step - compute - half,
                "target_hi_ms": step - compute + half}, [timeline])


def check(folder):
    folder = pathlib.Path(folder)
    if not folder.is_dir():
        raise ob_tool.UsageError(f"FOLDER: '{folder}' is invalid: a folder of traces or phase 4 runs")
    jobs = [*(traced_jobs(folder) if (folder / "trace_job.csv").is_file() else []), *phase4_jobs(folder)]
    if not jobs:
        raise ob_tool.UsageError(f"{folder}: no trace_job.csv and no phase 4 run with its timeline in it")
    rows = []
    for job, files in jobs:
        job = types.SimpleNamespace(**job)
        with tempfile.TemporaryDirectory() as scratch:
            out = pathlib.Path(scratch) / "a"
            alone = [str(path) for path in getattr(job, "compute_only", [])]
            with contextlib.redirect_stdout(io.StringIO()):
                analyze.main([*map(str, files), "--out", str(out), *(["--compute-only", *alone] if alone else [])])
            summary = pd.read_csv(out / "analysis.csv").set_index("mode").loc["overlap"]
            ranks = pd.read_csv(out / "analysis.ranks.csv")
        hta = hta_overlap(files) if job.system != "overlap-bench" else {}
        target = job.step_ms - job.compute_ms
        lo, hi = getattr(job, "target_lo_ms", float("nan")), getattr(job, "target_hi_ms", float("nan"))
        total = summary["total_added_ms"]
        # the traced step's own added time: against the compute-only steps the trace holds, as traced (else unprofiled)
        traced_compute = summary.get("compute_only_step_ms", float("nan"))
        traced_compute = job.compute_ms if pd.isna(traced_compute) else traced_compute
        for rank in ranks.itertuples():
            rows.append({"label": job.label, "system": job.system, "ranks": job.ranks, "rank": rank.rank,
                         "traced_step_ms": summary["time_ms_p50"], "step_ms": job.step_ms,
                         "compute_ms": job.compute_ms, "target_added_ms": target, "added_ms": summary["added_ms"],
                         "error": summary["added_ms"] / target - 1, "exposed_comm_ms": summary["exposed_comm_ms"],
                         "slowdown_ms": summary["slowdown_ms"], "peer_wait_ms": summary["peer_wait_ms"],
                         "error_without_wait": (summary["added_ms"] - summary["peer_wait_ms"]) / target - 1,
                         "wrapper_gpu_ms": summary["wrapper_gpu_ms"], "host_comm_ms": summary["host_comm_ms"],
                         "idle_added_ms": summary["idle_added_ms"],
                         "total_added_ms": total, "error_total": total / target - 1,
                         "traced_compute_only_ms": traced_compute,
                         "error_traced": total / (summary["time_ms_p50"] - traced_compute) - 1, "target_lo_ms": lo,
                         "target_hi_ms": hi, "verdict": verdict(total, target, lo, hi),
                         "verdict_added": verdict(summary["added_ms"], target, lo, hi),
                         "overlap_pct": rank.overlap_pct,
                         "hta_overlap_pct": hta.get(rank.rank, float("nan"))})
    return pd.DataFrame(rows)


def counts(table):
    """Per measure (added_ms, total_added_ms; and the total against the trace's own added time, `traced`:
    error_traced, no interval), how many jobs (not ranks) stand in each verdict."""
    jobs = table.drop_duplicates("label")
    rows = []
    traced = jobs["error_traced"].abs().le(0.10).map({True: "within 10 %", False: "off"})
    for measure, found in (("added", jobs["verdict_added"]), ("total", jobs["verdict"]), ("traced", traced)):
        found = found.value_counts()
        rows.append({"measure": measure, "jobs": len(jobs), "within_10_pct": int(found.get("within 10 %", 0)),
                     "inside_interval": int(found.get("inside the target's interval", 0)),
                     "off": int(found.get("off", 0))})
    return pd.DataFrame(rows)


def _folder(text):
    """FOLDER's kind: a folder that exists (check words the refusal as it always has)."""
    if not text or not pathlib.Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"'{text}' is invalid: a folder of traces or phase 4 runs")
    return text


def main():
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("folder", metavar="FOLDER", type=Kind("input_folder", _folder),
                        help="a trace_job.py --out folder")
    parser.add_argument("--csv", required=True, type=ob_tool.output_file(".csv"), help="the table to write")
    parser.add_argument("--counts", type=ob_tool.output_file(".csv"),
                        help="also write per measure the jobs of each verdict to this CSV")
    args = parser.parse_args()
    inputs = [("FOLDER", path) for path in pathlib.Path(args.folder).rglob("*") if path.is_file()]
    ob_tool.require_outputs([("--csv", args.csv), ("--csv (its metadata)", ob_csv.meta_path(args.csv))] +
                            ([("--counts", args.counts)] if args.counts else []), inputs)
    table = check(args.folder)
    try:
        from importlib.metadata import version

        hta = version("HolisticTraceAnalysis")
    except Exception:  # noqa: BLE001 - not installed
        hta = None
    meta = {"suite": "overlap-bench", "tool": "ob-analyze-check", "commit": ob_tool.commit_id(),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command_line": sys.argv,
            "traces": str(args.folder), "hta_version": hta,
            "trace_job": packs.read_json(pathlib.Path(args.folder) / "trace_job.meta.json", "FOLDER", schema="meta")
            if (pathlib.Path(args.folder) / "trace_job.meta.json").is_file() else None}
    ob_tool.write_text_atomic(ob_csv.meta_path(args.csv), json.dumps(meta, indent=2) + "\n")
    ob_tool.write_text_atomic(args.csv, table.to_csv(index=False))
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    tally = counts(table)
    if args.counts:
        ob_tool.write_text_atomic(args.counts, tally.to_csv(index=False))
    print(tally.to_string(index=False))
    return 0


def cli():
    """The console command ob-analyze-check (pyproject.toml) and `python3 analyze_check.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
