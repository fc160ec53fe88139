#!/usr/bin/env python3
"""ob-analyze: your own data-parallel job, from its profiler trace: per rank and step the communication (NCCL
kernels, by collective and bytes) and the compute, the share of communication hidden behind compute and the exposed
rest, the compute slowdown under overlap (the same kernels, by name and launch shape, timed while a collective ran
against while none did, in the same trace: where it holds steps of the job's model without the wrapper, each inside a
host range `ob_compute_only`, against the same instance in those), the wrapper's own kernels and its host calls
while the GPU waited for them, each collective tied to its bucket, and for DDP the bucket cap the planner's model
expects best, with the step it predicts and what the prediction rests on (METRICS.md, "Your own job").

TRACE... are the PyTorch profiler's Chrome traces (`export_chrome_trace`, one per rank, gzip too; DDP, FSDP/FSDP2 or
any job), Nsight Systems' SQLite export, or a phase 4 run's timeline CSV or the Chrome trace beside it (a timeline
with no overlapped communication lane, as phase 2's and phase 3's, is refused). Steps are the profiler's step markers
(ProfilerStep#N) or, without them, the repetition of the kernel sequence. Writes into --out: analysis.csv (this
suite's summary columns: the traced step as `overlap`, its compute and communication as `compute` and `comm`, with
overlap_pct, exposed_comm_ms, compute_slowdown, added_ms, wrapper_gpu_ms, host_comm_ms, idle_added_ms,
total_added_ms, compute_only_step_ms),
analysis.ranks.csv (per rank over every step),
analysis.buckets.csv (every collective: rank, step, its place, bytes, time), analysis.timeline.csv (this suite's
timeline schema: report.py, ob-plot-gantt and ob_trace read it), analysis.meta.json (the traces and their SHA-256
digests, the advice) and analysis.png (one step's Gantt).
A file that is not a trace (HTML, JSON cut short, a trace without GPU kernels, ranks of different jobs) is exit 2
naming it; a trace is streamed, so memory follows the kernels kept, not the file.

Usage:
  ob-analyze traces/ddp.rank0.trace.json.gz traces/ddp.rank1.trace.json.gz --out analysis/
"""
import hashlib
import json
import pathlib
import sys
import time

import numpy as np
import pandas as pd

from overlap_bench.trace import advice
from overlap_bench.trace import analysis_timeline
from overlap_bench.core import ob_tool
from overlap_bench.core.arguments import Kind
from overlap_bench.trace import probe_split
from overlap_bench.core import staging
from overlap_bench.trace import trace_ranks
from overlap_bench.trace import trace_read
from overlap_bench.trace import trace_stats


# A trace whose steps are more than this share replayed from CUDA graphs: said so, and no bucket advice.
REPLAYED = 0.5


OUTPUTS = ("analysis.csv", "analysis.timeline.csv", "analysis.buckets.csv", "analysis.ranks.csv",
           "analysis.meta.json", "analysis.parts.csv", "analysis.png")  # what --out receives


def _trace(text, folder=False):
    """A trace through its input policy (trace_read.require_trace: its cap the native reader's where it reads it), or
    where `folder`, a folder (a probe's: parse_args reads what it holds)."""
    import argparse

    if folder and pathlib.Path(text).is_dir():
        return text
    try:
        trace_read.require_trace(text)
    except ob_tool.UsageError as error:
        raise argparse.ArgumentTypeError(str(error).split(": ", 1)[-1]) from None
    return text


trace_file = Kind("input_file", _trace)  # a trace (or a phase 4 timeline CSV)
trace_path = Kind("input_path", lambda text: _trace(text, folder=True))  # a trace or a probe's folder


def parse_args(argv=None):
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("traces", nargs="+", type=trace_path, metavar="TRACE",
                        help="one trace per rank (or a phase 4 timeline CSV), or a probe's folder")
    parser.add_argument("--out", required=True, type=ob_tool.output_folder,
                        help="folder to write (created; must not hold an analysis yet)")
    parser.add_argument("--predictor", type=ob_tool.executable,
                        help="phase4_predict for the advice (default: on PATH or in build/)")
    parser.add_argument("--compute-only", nargs="+", default=[], metavar="TRACE", type=trace_file,
                        help="one trace per rank of the job's compute-only steps (its model and optimizer without "
                        "the wrapper), every step of it one: the slowdown's baseline where the job's traces hold no "
                        "ob_compute_only range (a CUDA-only profile records none)")
    args = parser.parse_args(argv)
    args.probe = None
    if len(args.traces) == 1 and pathlib.Path(args.traces[0]).is_dir():  # a probe's folder (overlap_bench.probe)
        folder = pathlib.Path(args.traces[0])
        if not (folder / "probe.json").is_file():
            parser.error(f"TRACE: '{folder}' is a folder without a probe's result (probe.json)")
        args.probe = folder / "probe.json"
        args.traces = sorted(str(p) for p in folder.glob("job.rank*.trace.json*"))
        args.compute_only += sorted(str(p) for p in folder.glob("compute-only.rank*.trace.json*"))
        if not args.traces:
            parser.error(f"TRACE: '{folder}' holds a probe's result without its traces (job.rank<R>.trace.json.gz)")
    for path in [*args.traces, *args.compute_only]:
        try:
            trace_read.require_trace(path)
        except ob_tool.UsageError as error:
            parser.error(str(error))
    if (pathlib.Path(args.out) / "analysis.csv").exists():
        parser.error(f"--out: '{args.out}' is invalid: it already holds an analysis (analysis.csv)")
    ob_tool.require_outputs([(f"--out ({name})", pathlib.Path(args.out) / name) for name in OUTPUTS],
                            [("TRACE", path) for path in [*args.traces, *args.compute_only]], created=True)
    return args


def summary(stats, system, world):
    """The summary rows: per step the slowest rank's, statistics over steps (the first step left out where there
    are three or more: its kernels warm up)."""
    frame = pd.DataFrame([{"rank": s.rank, "step": s.step, "step_ms": s.step_ms, "comm_ms": s.comm_ms,
                           "compute_ms": s.compute_ms, "exposed_ms": s.exposed_ms, "wait_ms": s.wait_ms,
                           "slowdown_ms": s.slowdown_ms, "host_ms": s.host_ms,
                           "wrapper_gpu_ms": s.wrapper_gpu_ms, "replayed": s.replayed, "idle_added_ms": s.idle_added_ms,
                           "slowed_ms": s.slowed_ms, "buckets": len(s.buckets), "blocking_ms": s.blocking_ms,
                           "grad_mb": sum(b[1] for b in s.buckets) / (1 << 20)} for s in stats])
    steps = sorted(frame["step"].unique())
    if len(steps) >= 3:
        frame = frame[frame["step"] != steps[0]]
    # Per step the slowest rank's row (its step the longest): its parts come from one rank, not the worst of each.
    slowest = frame.loc[frame.groupby("step")["step_ms"].idxmax()].set_index("step")
    rows = []
    for mode, column in (("overlap", "step_ms"), ("compute", "compute_ms"), ("comm", "comm_ms")):
        values = slowest[column].to_numpy()
        row = {"system": system, "phase": "trace", "mode": mode, "ranks": world,
               "chunks": int(slowest["buckets"].max()), "iters": len(values), "time_ms_p50": float(np.median(values)),
               "time_ms_p95": float(np.percentile(values, 95)), "time_ms_min": float(values.min()),
               "time_ms_max": float(values.max()), "time_ms_mean": float(values.mean()),
               "buckets": int(slowest["buckets"].max()), "grad_mb": float(slowest["grad_mb"].max())}
        if mode == "overlap":
            comm, exposed = slowest["comm_ms"].median(), slowest["exposed_ms"].median()
            row.update({"comm_ms": comm, "exposed_comm_ms": exposed,
                        "overlap_pct": 100 * (1 - exposed / comm) if comm > 0 else np.nan,
                        "slowdown_ms": slowest["slowdown_ms"].median(),
                        "compute_slowdown": (frame["slowdown_ms"].sum() / frame["slowed_ms"].sum()
                                             if frame["slowed_ms"].sum() > 0 else np.nan),
                        "added_ms": exposed + slowest["slowdown_ms"].median(),
                        "peer_wait_ms": slowest["wait_ms"].median(), "host_comm_ms": slowest["host_ms"].median(),
                        "wrapper_gpu_ms": slowest["wrapper_gpu_ms"].median(),
                        "idle_added_ms": slowest["idle_added_ms"].median(),
                        "blocking_comm_ms": slowest["blocking_ms"].median(),
                        "replayed_share": float(frame["replayed"].mean()),
                        "total_added_ms": exposed + sum(slowest[part].median() for part in
                                                        ("slowdown_ms", "wrapper_gpu_ms", "host_ms",
                                                         "idle_added_ms"))})
        rows.append(row)
    return pd.DataFrame(rows)


def per_rank(stats):
    """analysis.ranks.csv: per rank over every traced step, its communication, exposed part and share hidden (the
    figure Holistic Trace Analysis' get_comm_comp_overlap gives per rank, METRICS.md)."""
    frame = pd.DataFrame([{"rank": s.rank, "comm_ms": s.comm_ms, "exposed_ms": s.exposed_ms,
                           "slowdown_ms": s.slowdown_ms, "slowed_ms": s.slowed_ms} for s in stats])
    ranks = frame.groupby("rank").sum()
    ranks["steps"] = frame.groupby("rank").size()
    ranks["overlap_pct"] = 100 * (1 - ranks["exposed_ms"] / ranks["comm_ms"])
    ranks["compute_slowdown"] = ranks["slowdown_ms"] / ranks["slowed_ms"]
    return ranks.reset_index()[["rank", "steps", "comm_ms", "exposed_ms", "overlap_pct", "slowdown_ms",
                                "compute_slowdown"]]


def digest(path):
    hasher = hashlib.sha256()
    with open(path, "rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()


def main(argv=None):
    for line in run(parse_args(argv))["sentences"]:
        print(line)
    return 0


def analyse_probe(folder, out, probe):
    """A probe's folder analysed into `out` (overlap_bench.probe's finish): the split of its measured added time.
    `probe` is the result the probe just wrote into probe.json, taken as it is in memory: the probe needs torch and
    the standard library alone, not the schema checker (jsonschema) that a probe.json read from disk goes through."""
    args = parse_args([str(folder), "--out", str(out)])
    args.probe_result = probe
    return run(args)


def run(args):
    """Analyses the traces args names and writes --out; returns {"sentences", and with a probe "parts", "scale",
    "perturbation", ...: probe_split.split}."""
    started = time.monotonic()
    drawing = analysis_timeline.import_beside()  # the Gantt's code imported while the readers run
    traces = trace_ranks.read_all(args.traces)  # one worker per core
    trace_ranks.check_one_job(traces)
    compute_only(traces, args.compute_only)
    stats = trace_ranks.stats_all(traces)
    if not stats:
        raise ob_tool.UsageError(f"{args.traces[0]}: no step found in it")
    trace_stats.peer_waits(traces, stats)
    world = max(t.world for t in traces) or len(traces)
    # the collectives' names (a replayed step's kernels carry none: NCCL's kernel names then)
    collectives = {b[0].lower().replace("_", "") for s in stats for b in s.buckets}
    system = traces[0].system or ("pytorch-fsdp2" if any("reducescatter" in c for c in collectives) else
                                  "pytorch-ddp" if any("allreduce" in c for c in collectives) else "trace")
    table = summary(stats, system, world)
    spans = [t.compute_only_ms for t in traces if not np.isnan(t.compute_only_ms)]  # the slowest rank's, as the step's
    table.loc[table["mode"] == "overlap", "compute_only_step_ms"] = max(spans) if spans else np.nan
    replayed = table.set_index("mode").loc["overlap", "replayed_share"] > REPLAYED  # no collective's size in it
    advised = advice.advise(traces, stats, world, args.predictor) if system == "pytorch-ddp" and not replayed else None
    # each trace's SHA-256 as the native reader took it while reading (else the file is read again for it)
    digests = {t.path: t.native.sha256 for t in traces if getattr(t, "native", None) is not None}
    buckets = pd.DataFrame([{"rank": s.rank, "step": s.step, "bucket": i, "collective": b[0], "bytes": b[1],
                             "ms": b[2]} for s in stats for i, b in enumerate(s.buckets)],
                           columns=["rank", "step", "bucket", "collective", "bytes", "ms"])  # none: the header alone
    meta = {"suite": "overlap-bench", "tool": "ob-analyze", "commit": ob_tool.commit_id(), "command_line": sys.argv,
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "system": system, "ranks": world,
            "gpus": [{"gpu_name": t.gpu} for t in traces if t.gpu], "nccl": traces[0].nccl,
            "traces": [{"path": str(p), "sha256": digests.get(str(pathlib.Path(p))) or digest(p)}
                       for p in [*args.traces, *args.compute_only]],
            "config_columns": ["system", "phase", "ranks"], "seconds": round(time.monotonic() - started, 1),
            "slowdown_baseline": baseline(traces), "advice": advised}
    split = None
    if args.probe:  # the measured total, the trace's parts scaled to it
        try:
            probe = getattr(args, "probe_result", None) or probe_split.load(args.probe)
        except ValueError as error:
            raise ob_tool.UsageError(str(error)) from None
        split = probe_split.split(table.set_index("mode").loc["overlap"].to_dict(), probe)
        meta["probe"] = {k: probe.get(k) for k in ("ranks", "device", "torch", "date_utc", "clock", "step_ms",
                                                   "compute_only_step_ms", "added_ms", "replicas_agree")}
        table.loc[table["mode"] == "overlap", "measured_added_ms"] = split["measured_ms"]
        table.loc[table["mode"] == "overlap", "measured_added_ci_lo_ms"] = split["measured_ci_lo_ms"]
        table.loc[table["mode"] == "overlap", "measured_added_ci_hi_ms"] = split["measured_ci_hi_ms"]
        table.loc[table["mode"] == "overlap", "probe_scale"] = split["scale"]
        table.loc[table["mode"] == "overlap", "perturbation"] = split["perturbation"]
    output = staging.Staging(args.out, marker="analysis.csv", runs=False)
    try:
        buckets.to_csv(output.path / "analysis.buckets.csv", index=False)
        per_rank(stats).to_csv(output.path / "analysis.ranks.csv", index=False)
        (output.path / "analysis.meta.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
        if split:
            pd.DataFrame(split["parts"]).to_csv(output.path / "analysis.parts.csv", index=False)
        table.to_csv(output.path / "analysis.csv", index=False)
        drawing.join()
        analysis_timeline.write_and_draw(output.path, traces, stats)  # the timeline and the Gantt
        output.commit(last="analysis.csv")
    finally:
        output.discard()
    lines = sentences(table, advised, advice.gpu_busy(stats) if system != "overlap-bench" else 1.0,
                      meta["slowdown_baseline"])
    if len(traces) < world:  # the job's ranks (distributedInfo) against the traces given
        lines.insert(0, f"Only {len(traces)} of the job's {world} ranks' traces were given: the slowest rank and "
                        "every figure below are of those ranks only, the missing ranks' waits unseen")
    if split:
        lines.append(probe_split.sentence(split))
    elif system != "overlap-bench":
        lines.append(alone_caveat(table, advice.gpu_busy(stats)))
    return {"sentences": lines, **(split or {})}


def alone_caveat(table, busy):
    """What an analysis of a plain trace cannot know, in words, and how far the profiler may have moved its step."""
    row = table.set_index("mode").loc["overlap"]
    baseline = ("its compute-only steps as traced" if not np.isnan(row.get("compute_only_step_ms", np.nan))
                else "no compute-only step: the slowdown rests on lone instances of the same kernels")
    return (f"From the trace alone: no step of the job without the profiler to hold it against, and {baseline}; "
            f"the GPU idled {100 * (1 - busy):.0f} % of the traced step waiting on its host, and the profiler's own "
            "host work lengthens that share, so the added time may be off by up to that much of the step. Measured "
            "exactly: the probe in your loop (overlap_bench.probe, docs/USAGE.md)")


def compute_only(traces, paths):
    """Each rank's compute-only trace (--compute-only) as its slowdown's baseline, every step of it one."""
    for path in paths:
        for alone in trace_read.read(path):
            job = next((t for t in traces if t.rank == alone.rank), None)
            if job is None or job.isolated:
                raise ob_tool.UsageError(f"{path}: rank {alone.rank} has " + (
                    "compute-only steps already (in its trace, or an earlier --compute-only file)" if job else
                    "no trace of the job among TRACE"))
            steps = [kernels for _, kernels in trace_stats.steps_of(alone)]
            if not steps:
                raise ob_tool.UsageError(f"{path}: no compute-only step found in it")
            if alone.world and job.world and alone.world != job.world:
                raise ob_tool.UsageError(f"{path}: a compute-only trace of another job (world size {alone.world}, "
                                         f"the job's {job.world})")
            theirs = {(k.name, k.shape) for k in alone.kernels if not k.comm}
            if not any((k.name, k.shape) in theirs for k in job.kernels if not k.comm):
                raise ob_tool.UsageError(f"{path}: a compute-only trace of another job (no compute kernel of "
                                         f"{job.path}'s by name and launch shape in it)")
            trace_read.set_compute_only(job, steps, "compute-only trace")


def baseline(traces):
    """What the slowdown holds the compute kernels against (METRICS.md, "Your own job")."""
    sources = {t.baseline for t in traces}
    return sources.pop() if len(sources) == 1 and "" not in sources else "lone instances"


BASELINES = {"compute-only steps": "against the job's compute-only steps in the trace",
             "compute-only trace": "against the job's compute-only steps in their own trace",
             "compute-only mode": "against the run's compute-only mode",
             "lone instances": "against the same kernels' instances with no collective in flight"}


def sentences(table, advised, busy=1.0, basis="lone instances"):
    """The analysis in words; where the GPU was busy for less than advice.HOST_PACED of the traced step (`busy`), a
    warning that the profiler's own host work lengthens such a step (results/1xH200/trace-profiles)."""
    row = table.set_index("mode").loc["overlap"]
    ranks, steps = int(row["ranks"]), int(row["iters"])
    lines = [f"{row['system']}, {ranks} rank{'s' * (ranks != 1)}, {steps} step{'s' * (steps != 1)}: the step took "
             f"{row['time_ms_p50']:.3f} ms (median, slowest rank); "
             + (f"communication {row['comm_ms']:.3f} ms, {row['overlap_pct']:.0f} % of it hidden behind compute, "
                f"{row['exposed_comm_ms']:.3f} ms exposed; " if np.isfinite(row["overlap_pct"]) else
                "communication none measured; ")
             + (f"compute ran {100 * row['compute_slowdown']:.0f} % slower beside communication "
                if np.isfinite(row["compute_slowdown"]) else "compute slowdown none measured (no compute kernel "
                "beside a collective had a time alone to hold it against) ")
             + f"({row['slowdown_ms']:.3f} ms a step, {BASELINES[basis]}): {row['added_ms']:.3f} ms added to the "
             f"compute by communication; the wrapper's own kernels took {row['wrapper_gpu_ms']:.3f} ms more and its "
             f"host calls {row['host_comm_ms']:.3f} ms while the GPU waited for them"
             + (f"; it idled {row['idle_added_ms']:.3f} ms more than in the compute-only steps" if basis !=
                "lone instances" else "") + f": {row['total_added_ms']:.3f} ms in all"]
    if busy < advice.HOST_PACED:
        lines.append(f"The GPU ran work for {100 * busy:.0f} % of the traced step: its host paces the step, and the "
                     "profiler's own host work lengthens such a step, so these times are the traced job's, longer "
                     "than your job's without the profiler (tracing without record_shapes keeps them nearer, CUDA "
                     "activity alone nearest: its compute-only steps then in a trace of their own, --compute-only)")
    if row.get("replayed_share", 0) > REPLAYED:
        told = ("the wrapper's own kernels in them are those of the names and launch shapes its host calls launched "
                "in the trace's eager steps (trace_job.py --graph profiles one before them)"
                if row["wrapper_gpu_ms"] > 0 else
                "each kernel was launched by a graph launch, and the trace holds no eager step whose host calls tell "
                "the wrapper's own kernels (DDP's gradient division, its copies) from the compute: they count as "
                "compute here, in neither the exposed communication nor the slowdown, and the added time is short by "
                "them (profile one eager step before the replays, as trace_job.py --graph does)")
        lines.append(f"Its steps were replayed from CUDA graphs: {told}; no bucket advice is given (a replayed "
                     "collective's size is not in the trace; results/2xH200/trace-graph)")
    if advised:
        lines.append(advised["sentence"])
    return lines


def cli():
    """The console command ob-analyze (pyproject.toml) and `python3 analyze.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
