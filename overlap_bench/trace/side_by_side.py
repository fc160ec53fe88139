"""ob-side-by-side: on the same jobs, the probe's added time beside what a plain profiler trace tells the tools a user
already has: ob-analyze on the trace alone, Holistic Trace Analysis' overlap of communication with computation, and
AMD TraceLens' exposed communication; each held against the truth measured in the same process without the profiler
(truth.json: examples/probe_ddp.py --truth, ob-probe-suite), each difference explained in words.

Each JOB is a probe folder holding probe.json and truth.json, and beside it the folder of the job's plain trace
(examples/probe_ddp.py --plain-trace: CPU and CUDA activity, as the tutorials trace) named JOB-plain, or
PROBE=PLAIN. HTA (PyPI HolisticTraceAnalysis) and TraceLens (github.com/AMD-AGI/TraceLens) are used where installed;
their columns are left empty otherwise, and the metadata says which ran (name and version).

  ob-side-by-side probes/nccl1-25mb probes/gloo2-25mb --csv side-by-side.csv
"""
import contextlib
import importlib.metadata
import io
import json
import logging
import math
import pathlib
import sys
import tempfile
import time
import warnings

from overlap_bench.core import ob_tool
from overlap_bench.trace import analyze, probe_split, trace_read

TOOLS = {"hta": "HolisticTraceAnalysis", "tracelens": "TraceLens"}


def version(tool):
    try:
        return importlib.metadata.version(TOOLS[tool])
    except importlib.metadata.PackageNotFoundError:
        return ""


def traces(plain):
    found = sorted(plain.glob("*.json.gz")) + sorted(plain.glob("*.json"))
    if not found:
        raise ob_tool.UsageError(f"JOB: '{plain}' holds no trace (*.json, *.json.gz)")
    return found


def steps_in(path):
    """The profiler's steps a trace holds (its ProfilerStep#N ranges on the host), read by the suite's streaming
    reader."""
    return len(trace_read.read_kineto(path).steps) or 1


def plain_analysis(paths):
    """ob-analyze on the plain trace alone: its added time a step, its step."""
    with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
        analyze.run(analyze.parse_args([*map(str, paths), "--out", out]))
        import pandas as pd

        row = pd.read_csv(pathlib.Path(out) / "analysis.csv").set_index("mode").loc["overlap"]
    return {"plain_step_ms": float(row["time_ms_p50"]), "plain_added_ms": float(row["total_added_ms"])}


@contextlib.contextmanager
def guarded(tool, path):
    """Another project's analysis failing on a trace leaves its columns empty, the failure named in the metadata."""
    try:
        yield
    except Exception as error:  # noqa: BLE001 (any failure of a third-party tool is its own, not this table's)
        FAILED.setdefault(TOOLS[tool], []).append(f"{path}: {type(error).__name__}: {str(error)[:200]}")


@contextlib.contextmanager
def quiet():
    """HTA and TraceLens print progress and warnings: kept off the table's output."""
    logging.disable(logging.WARNING)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            yield
        finally:
            logging.disable(logging.NOTSET)


FAILED = {}  # tool: why it failed on a job (the metadata says; its columns are then empty)


def hta_overlap(plain):
    """HTA's communication-computation overlap of rank 0, in per cent (NaN: no communication kernel on the GPU, HTA
    not installed or failing on the trace)."""
    if not version("hta"):
        return math.nan
    with guarded("hta", plain), quiet():
        from hta.trace_analysis import TraceAnalysis

        table = TraceAnalysis(trace_dir=str(plain)).get_comm_comp_overlap(visualize=False)
        return float(table.sort_values("rank").iloc[0, 1])
    return math.nan


def tracelens_parts(path):
    """TraceLens' GPU timeline of rank 0's trace, a step: (exposed communication, all communication) in ms."""
    if not version("tracelens"):
        return math.nan, math.nan
    steps = steps_in(path)  # this suite's reader: its errors are its own, not TraceLens'
    with guarded("tracelens", path), quiet():
        from TraceLens import TreePerfAnalyzer

        table = TreePerfAnalyzer.from_file(str(path)).get_df_gpu_timeline().set_index("type")["time ms"]
        return float(table["exposed_comm_time"]) / steps, float(table["total_comm_time"]) / steps
    return math.nan, math.nan


def off(value, truth):
    return value / truth - 1 if truth > 0 and math.isfinite(value) else math.nan


def explained(row):
    """Each tool's difference from the truth, in words."""
    words = []
    if row["within_5pct"]:
        words.append("the probe within 5 % of the truth or inside its interval")
    else:
        words.append(f"the probe {100 * row['probe_error']:+.0f} % off: its job step "
                     f"{100 * (row['step_ms'] / row['truth_step_ms'] - 1):+.0f} % and its compute-only step "
                     f"{100 * (row['compute_only_step_ms'] / row['truth_compute_ms'] - 1):+.0f} % from the truth's "
                     "(the truth's steps each synchronised, the probe's back to back)")
    words.append(f"ob-analyze on the plain trace {100 * row['plain_error']:+.0f} % off: no compute-only step and "
                 "no unprofiled step to hold the trace against")
    if not math.isfinite(row["tracelens_comm_ms"]):
        words.append("TraceLens not run (not installed, or it failed on the trace: the metadata says)")
    elif row["tracelens_comm_ms"] == 0:
        words.append("HTA and TraceLens see no communication kernel on the GPU (" + (
            "gloo communicates on the host" if row["backend"] == "gloo" else "one rank's collectives launch none") +
            "): the added time is invisible to them")
    else:
        words.append("TraceLens' exposed communication leaves out the wrapper's copies, the host's gaps and the "
                     "compute slowed beside the collectives; HTA's overlap is a share, not a time")
    return "; ".join(words)


def job_row(probe_folder, plain):
    try:
        row, probe = probe_split.table_row(probe_folder)
    except (ValueError, OSError) as error:
        raise ob_tool.UsageError(str(error)) from None
    if "truth_added_ms" not in row:
        raise ob_tool.UsageError(f"JOB: '{probe_folder}' holds no truth.json: nothing to hold the tools against")
    paths = traces(plain)
    row = {"job": row["job"], "ranks": row["ranks"], "backend": row["backend"], "wrapper": probe.get("wrapper", ""),
           "truth_added_ms": row["truth_added_ms"], "truth_ci_lo_ms": row["truth_ci_lo_ms"],
           "truth_ci_hi_ms": row["truth_ci_hi_ms"], "probe_added_ms": row["added_ms"], "step_ms": row["step_ms"],
           "compute_only_step_ms": row["compute_only_step_ms"], "truth_step_ms": row["truth_step_ms"],
           "truth_compute_ms": row["truth_compute_ms"],
           "within_5pct": row["within_5pct"],
           **plain_analysis(paths), "hta_overlap_pct": hta_overlap(plain)}
    row["tracelens_exposed_comm_ms"], row["tracelens_comm_ms"] = tracelens_parts(paths[0])
    row["probe_error"] = off(row["probe_added_ms"], row["truth_added_ms"])
    row["plain_error"] = off(row["plain_added_ms"], row["truth_added_ms"])
    row["tracelens_error"] = off(row["tracelens_exposed_comm_ms"], row["truth_added_ms"])
    row["explained"] = explained(row)
    return row


def _job(text):
    """JOB's kind: a probe folder that exists, or PROBE=PLAIN, two (JOB-plain, the default plain folder, is checked
    once parsed, naming what is missing)."""
    import argparse

    for folder in text.split("=", 1) if "=" in text else [text]:
        if not folder or not pathlib.Path(folder).is_dir():
            raise argparse.ArgumentTypeError(f"'{folder}' is not a folder")
    return text


def main(argv=None):
    from overlap_bench.core.arguments import Kind

    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("jobs", nargs="+", metavar="JOB", type=Kind("input_folder", _job),
                        help="a probe folder (its plain trace in JOB-plain), or PROBE=PLAIN")
    parser.add_argument("--csv", required=True, type=ob_tool.output_file(".csv"),
                        help="the table to write (its metadata beside it, .meta.json)")
    args = parser.parse_args(argv)
    FAILED.clear()  # this call's failures only
    out = pathlib.Path(args.csv)
    if out.suffix != ".csv" or not out.parent.is_dir():
        raise ob_tool.UsageError(f"--csv: '{out}' is invalid: a .csv file in an existing folder")
    pairs = [tuple(map(pathlib.Path, job.split("=", 1))) if "=" in job else
             (pathlib.Path(job), pathlib.Path(job.rstrip("/") + "-plain")) for job in args.jobs]
    for probe_folder, plain in pairs:
        for folder in (probe_folder, plain):
            if not folder.is_dir():
                raise ob_tool.UsageError(f"JOB: '{folder}' is not a folder")
    meta_path = out.with_suffix(".meta.json")
    ob_tool.require_outputs([("--csv", out), ("--csv", meta_path)],
                            [("JOB", p / "probe.json") for p, _ in pairs])
    import pandas as pd

    rows = [job_row(p, plain) for p, plain in pairs]
    meta = {"suite": "overlap-bench", "tool": "ob-side-by-side", "commit": ob_tool.commit_id(),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command_line": sys.argv,
            "tools": {TOOLS[t]: version(t) or "not installed" for t in TOOLS}, "tool_failures": FAILED}
    ob_tool.write_text_atomic(meta_path, json.dumps(meta, indent=2) + "\n")
    ob_tool.write_text_atomic(out, pd.DataFrame(rows).to_csv(index=False))
    for row in rows:
        print(f"{row['job']}: {row['explained']}")
    return 0


def cli():
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
