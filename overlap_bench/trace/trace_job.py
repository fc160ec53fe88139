#!/usr/bin/env python3
"""A data-parallel job traced as a user traces theirs: PyTorch DDP (or FSDP2) on phase 4's model or a transformer
(--model, as bench_ddp.py's), stepped under
torch.profiler with its step markers (ProfilerStep#N), one Chrome trace per rank (gzipped), and beside them the same
job's steps timed without the profiler: the wrapped step and its compute-only step (no DDP, the same optimizer),
so an analysis of the traces (ob-analyze) can be checked against what the job measured.

Launch with torchrun, one process per GPU:
  torchrun --nproc_per_node=2 -m overlap_bench.trace.trace_job --configs 4096,16,512 --bucket-mb 25 --out traces/
Writes per configuration and setting <out>/<label>.rank<R>.trace.json.gz and one <out>/trace_job.csv (label, system,
model, hidden, layers, batch, bucket_mb, ranks, step_ms, compute_ms: medians of the slowest rank over --iters untimed by
the profiler, the two timed in turn over --passes so that a drift of the clocks falls on both; target_lo_ms and
target_hi_ms: the 95 % bootstrap interval of step_ms - compute_ms; graph: 1 where both steps were replayed from CUDA
graphs, --graph: the profiler then records one eager step before the replayed ones, whose host calls tell DDP's
own kernels in them) with its metadata. The profiler records --compute-steps of the job's compute-only step, half
before the job's steps and half after them (a drift of the clocks over the traced window falls on both), each inside
a host range named `ob_compute_only`: ob-analyze holds the job's compute kernels against those, in the same trace (a
user marks theirs alike); with --profile gpu (no host range recorded) in a trace of their own after the job's,
<label>.compute-only.rank<R>.trace.json.gz (ob-analyze --compute-only).
"""
import gzip
import json
import os
import pathlib
import shutil
import socket
import sys
import time

import numpy as np

from overlap_bench.ddp import bench_ddp
from overlap_bench.core import ob_tool
from overlap_bench.trace import trace_read
from overlap_bench.ddp.ddp_steps import (Mlp, Step, Transformer, dist, graph_stream, graphed, pass_iters, slowest,
                                        timed,
                                    torch, wrap)


def parse_args():
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    bench_ddp.add_work_arguments(parser)
    parser.add_argument("--bucket-mb", type=float, nargs="+", default=[25.0], help="DDP bucket_cap_mb, one job each")
    parser.add_argument("--fsdp", action="store_true", help="FSDP2 (fully_shard per layer) instead of DDP")
    parser.add_argument("--iters", type=int, default=20, help="timed steps without the profiler (default: 20)")
    parser.add_argument("--steps", type=int, default=4, help="steps the profiler records (default: 4)")
    parser.add_argument("--profile", choices=("full", "light", "gpu"), default="full",
                        help="what the profiler records: full (CPU and CUDA activity, operators' input shapes: what "
                        "the advice reads), light (no shapes) or gpu (CUDA activity only: no host ranges, no step "
                        "markers) (default: full)")
    parser.add_argument("--compute-steps", type=int, default=2, help="compute-only steps the profiler records, "
                        "half before the job's and half after, marked `ob_compute_only`: the slowdown's baseline "
                        "(default: 2; 0: none, the baseline then the lone instances of each kernel in the job's "
                        "steps; with --profile gpu, which records no host range, all after the job's, in a trace of "
                        "their own: <label>.compute-only.rank<R>.trace.json.gz)")
    parser.add_argument("--passes", type=int, default=4, help="the compute-only and the wrapped step timed in turn "
                        "this many times, --iters shared among them (default: 4)")
    parser.add_argument("--graph", action="store_true", help="DDP's step and the compute-only step each captured once "
                        "in a CUDA graph and replayed, traced and timed alike (bench_ddp.py --graph): the profiler "
                        "then slows no launch (DDP only: FSDP2's hooks are not captured)")
    parser.add_argument("--out", required=True, help="folder to write (created)")
    args = parser.parse_args()
    bench_ddp.check_configs(parser, args.configs)
    if not 1 <= args.steps <= 50 or not 1 <= args.iters <= 10000:
        parser.error("--steps: 1 to 50, --iters: 1 to 10000")
    if not 0 <= args.compute_steps <= 50:
        parser.error(f"--compute-steps: '{args.compute_steps}' is invalid: from 0 to 50")
    if args.graph and args.fsdp:
        parser.error("--graph: '--fsdp' is invalid with it: FSDP2's hooks are not captured in a CUDA graph")
    if not 1 <= args.passes <= args.iters:
        parser.error(f"--passes: '{args.passes}' is invalid: from 1 to --iters")
    if not all(0 < mb <= 1e6 for mb in args.bucket_mb):
        parser.error(f"--bucket-mb: '{args.bucket_mb}' is invalid: numbers in (0, 1e6]")
    for option, value, ok, allowed in bench_ddp.work_checks(args):
        if not ok:
            parser.error(f"{option}: '{value}' is invalid: {allowed}")
    if args.model:  # one parser of configs, phase4_model's, as bench_ddp.py's
        try:
            args.shape = ob_tool.model_blocks(args.model, args.blocks)
        except ob_tool.UsageError as error:
            parser.error(str(error))
    return args


def in_turn(steps, iters, passes):
    """Per step function, the slowest rank's times of `iters` iterations, the functions timed in turn `passes`
    times (each pass its share of `iters`, after a warm-up of its own)."""
    times = [[] for _ in steps]
    for k in range(passes):
        for step, mine in zip(steps, times):
            mine += slowest(timed(step, pass_iters(iters, passes, k), 3))
    return times


def difference_interval(step, compute, seed=1234, count=1000):
    """95 % bootstrap interval of median(step) - median(compute), each resampled on its own."""
    rng = np.random.default_rng(seed)
    step, compute = np.asarray(step), np.asarray(compute)
    diffs = np.median(rng.choice(step, (count, len(step))), axis=1) - \
        np.median(rng.choice(compute, (count, len(compute))), axis=1)
    return tuple(float(v) for v in np.percentile(diffs, [2.5, 97.5]))


def trace(step, steps, path, kind="full", eager=None, compute=None, compute_steps=0, alone=None):
    """`steps` of `step` profiled after a wait and a warm-up step; with `eager` (the replayed step's eager self), one
    step of it before them: its host calls tell the wrapper's own kernels, which ob-analyze then finds in the
    replays; `compute_steps` of `compute` (the compute-only step), half before those and half after, each inside a
    COMPUTE_ONLY host range, or, where `alone` names a file (kind "gpu" records no host range), all in a trace of
    their own written there after the job's (ob-analyze --compute-only)."""
    from torch.profiler import record_function

    def marked():
        with record_function(trace_read.COMPUTE_ONLY):
            compute()

    inside = compute_steps if compute and alone is None else 0
    profiled([marked] * (inside // 2) + ([eager] if eager else []) + [step] * steps + [marked] * (inside - inside // 2),
             step, path, kind)
    if compute and alone is not None and compute_steps:
        profiled([compute] * compute_steps, compute, alone, kind)


def profiled(active, warm, path, kind):
    """Each of `active` profiled (each followed by a synchronize and a profiler step) after a wait and a warm-up step
    of `warm`; the Chrome trace written to `path`."""
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CUDA] + ([] if kind == "gpu" else [ProfilerActivity.CPU])
    with profile(activities=activities, record_shapes=kind == "full",
                 schedule=schedule(wait=1, warmup=1, active=len(active))) as profiler:
        for one in [warm, warm] + active:
            one()
            torch.cuda.synchronize()
            profiler.step()
    profiler.export_chrome_trace(str(path))


def run(args, work, setting, rank, world):
    torch.manual_seed(1234)
    model = work.build("cuda")
    generator = torch.Generator(device="cuda").manual_seed(17 * (rank + 1))
    x, target = work.data(generator)
    options = {"lr": 0.01, **({"foreach": True} if args.fsdp else {"fused": True})}
    steps = Step(work, x, target, set_to_none=True)

    def stepper(model):
        return steps.of(model, torch.optim.SGD(model.parameters(), **options))

    torch.manual_seed(1234)
    wrapped, _ = wrap(work, "fsdp" if args.fsdp else "ddp", 0 if args.fsdp else setting, True, work.build("cuda"))
    step, compute = stepper(wrapped), stepper(model)
    eager = step if args.graph else None
    if args.graph:  # as bench_ddp.py --graph: DDP warmed up by 11 steps before its capture
        compute, step = graphed(compute), graphed(step, eager=11)
    computes, steps_ms = in_turn([compute, step], args.iters, args.passes)
    lo, hi = difference_interval(steps_ms, computes)
    label = f"{'fsdp2' if args.fsdp else 'ddp'}-{work.tag}" + \
        ("" if args.fsdp else f"-{setting:g}mb") + ("-graph" if args.graph else "")
    path = pathlib.Path(args.out) / f"{label}.rank{rank}.trace.json"
    alone = path.with_name(f"{label}.compute-only.rank{rank}.trace.json") if args.profile == "gpu" else None
    trace(step, args.steps, path, args.profile, eager, compute, args.compute_steps, alone)
    for written in (p for p in (path, alone) if p and p.exists()):
        with open(written, "rb") as source, gzip.open(f"{written}.gz", "wb") as target:
            shutil.copyfileobj(source, target)
        written.unlink()
    shape = {key: work.keys.get(key, "") for key in ("model", "hidden", "layers", "batch")}
    return {"label": label, "system": "pytorch-fsdp2" if args.fsdp else "pytorch-ddp", **shape,
            "bucket_mb": "" if args.fsdp else setting, "ranks": world,
            "step_ms": float(np.median(steps_ms)), "compute_ms": float(np.median(computes)),
            "target_lo_ms": lo, "target_hi_ms": hi, "traced_steps": args.steps, "graph": int(args.graph),
            "compute_steps": args.compute_steps}


def main():
    args = parse_args()
    if torch is None or not torch.cuda.is_available():
        print("trace_job: needs PyTorch and a CUDA device", file=sys.stderr)
        return 77
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.backends.cuda.matmul.allow_tf32 = True
    pathlib.Path(args.out).mkdir(parents=True, exist_ok=True)
    rows = []
    for work in [Transformer(args)] if args.model else [Mlp(text) for text in args.configs]:
        for setting in ([None] if args.fsdp else args.bucket_mb):
            with graph_stream(args.graph):
                rows.append(run(args, work, setting, rank, world))
    if rank == 0:
        import pandas as pd

        csv = pathlib.Path(args.out) / "trace_job.csv"
        existing = [pd.read_csv(csv)] if csv.is_file() else []
        pd.concat(existing + [pd.DataFrame(rows)]).to_csv(csv, index=False)
        meta = {"suite": "overlap-bench", "tool": "trace_job", "host": socket.gethostname(), "ranks": world,
                "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command_line": sys.argv,
                "torch": torch.__version__, "gpus": [{"gpu_name": torch.cuda.get_device_name(0)}],
                "commit": ob_tool.commit_id()}
        (pathlib.Path(args.out) / f"trace_job{'-fsdp2' if args.fsdp else ''}.meta.json").write_text(
            json.dumps(meta, indent=2) + "\n")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(ob_tool.main_guard(main))
