"""ob-analyze's advice for a DDP job: the bucket cap the planner's model expects best, from the trace alone.

The model needs what phase 4's calibration holds (METRICS.md, "The planner"), and a DDP trace has each part of it:
per gradient (each AccumulateGrad of the backward, its parameter's elements) the GPU time of the backward functions
that produced it, the forward's and the optimizer's time, the all-reduces' time against their bytes (a least-squares
line, latency and bandwidth), and the compute slowdown under overlap (trace_stats). They are written as a
calibration of the traced ranks and given to phase4_predict, whose DDP recommendation (PyTorch's own bucket
assignment at each candidate cap) is the advice.

The model charges GPU time only. Where the host paces the step (its GPU busy, compute or communication, for less than
HOST_PACED of the traced step), every bucket adds an all-reduce launch on that host which the model does not see:
there the advice keeps to caps of at least DDP's 25 MB default (gpt2 on 2 x H200: the model's GPU-time best, a
smaller cap, ran slower than 25 MB; results/2xH200/trace-models).
"""
import json
import pathlib
import subprocess
import tempfile

import numpy as np
import pandas as pd

from overlap_bench.core import ob_tool
from overlap_bench.trace import trace_stats

HOST_PACED = 0.5  # the GPU busy for less than this share of the traced step: its host paces it
DEFAULT_CAP_MB = 25.0  # DDP's bucket_cap_mb default


def gradient_steps(trace, step):
    """(forward ms, [(elements, backward ms) per gradient in the order the backward completes them], update ms) of
    one step of one rank, from its autograd functions' host ranges and the kernels they launched; None where the
    trace has no AccumulateGrad (record_shapes off, or not an autograd backward)."""
    number, start, end = step
    grads = sorted(g for g in trace.grads if start <= g[0] < end)
    functions = sorted(f for f in trace.backward if start <= f[0] < end)
    if not grads or not functions:
        return None
    launched = {}
    for host, ms in trace_stats.compute_launched(trace, start, end):
        launched.setdefault(host, []).append(ms)
    hosts = np.array(sorted(launched))
    times = [sum(launched[h]) for h in hosts]

    def gpu_ms(a, b):  # kernels launched from host time a to b
        lo, hi = np.searchsorted(hosts, a), np.searchsorted(hosts, b)
        return float(sum(times[lo:hi]))

    backward_start = functions[0][0]
    steps, previous = [], backward_start
    for when, elements in grads:
        steps.append((elements, gpu_ms(previous, when)))
        previous = when
    update = sum(gpu_ms(a, b) for a, b in trace.optimizer if start <= a < end)
    return gpu_ms(start, backward_start), steps, update


def comm_fit(stats):
    """(alpha ms, beta bytes per ms) of the collectives' time against their bytes: a least-squares line over two
    sizes or more; through the origin for one size (as a calibration of one size is read); None without sizes."""
    points = [(b[1], b[2]) for s in stats for b in s.buckets if b[1] > 0]
    sizes = {p[0] for p in points}
    if not sizes:
        return None
    x, y = np.array([p[0] for p in points]), np.array([p[1] for p in points])
    if len(sizes) == 1:
        return 0.0, float(np.median(x / y))
    slope, intercept = np.polyfit(x, y, 1)
    if slope <= 0:
        return None
    return max(float(intercept), 0.0), 1.0 / float(slope)


def calibration(trace, stats, world):
    """A calibration (phase 4's schema) of what the trace shows, or None where it cannot say."""
    middle = sorted(trace.steps, key=lambda s: s[1])
    parts = gradient_steps(trace, middle[len(middle) // 2]) if middle else None
    fit = comm_fit([s for s in stats if s.rank == trace.rank])
    if parts is None or fit is None:
        return None, fit
    forward, steps, update = parts
    steps = [(e, ms) for e, ms in steps if e > 0]
    alpha, beta = fit  # ms, bytes per ms
    total = 4.0 * sum(e for e, _ in steps)
    sizes = sorted({min(total, float(1 << m)) for m in range(20, 40, 2) if (1 << m) <= 4 * total})
    slowed = sum(s.slowed_ms for s in stats)
    slowdown = max(-0.05, sum(s.slowdown_ms for s in stats) / slowed) if slowed > 0 else 0.0
    iteration = forward + sum(ms for _, ms in steps) + update
    cal = {"kind": "overlap-bench phase4 calibration", "schema_version": 1, "commit": "trace", "host": "trace",
           "date_utc": "", "gpu": trace.gpu, "ranks": world,
           "model": {"hidden": 1, "layers": len(steps), "batch": 1, "tf32": True, "comm_dtype": "fp32",
                     "accum_steps": 1, "graph": False, "name": "trace",
                     "step_elements": [int(e) for e, _ in steps]},
           "compute": {"forward_ms": forward, "update_ms": update, "iteration_ms": iteration,
                       "step_ms": [max(ms, 1e-6) for _, ms in steps]},
           "strategies": [{"sync": "nccl", "bytes": sizes, "comm_ms": [alpha + b / beta for b in sizes],
                           "gap_ms": [0.0] * len(sizes), "stretch": [1.0] * len(sizes),
                           "slowdown": [slowdown] * len(sizes)}]}
    return cal, fit


def gpu_busy(stats):
    """The median over one rank's steps of the share of the step its GPU ran a kernel that did work: compute, or
    communication not beside compute less its wait for a later rank's collective (trace_stats.peer_waits; a kernel
    that spins until another rank's host catches up does not make this GPU busy, as in added_ms)."""
    return float(np.median([(s.compute_ms + s.exposed_ms - s.wait_ms) / s.step_ms for s in stats if s.step_ms > 0]
                           or [1.0]))


def predicted_row(cal, world, least_cap_mb, predictor):
    """phase4_predict's row for calibration `cal` on `world` ranks, DDP's cap among those of at least least_cap_mb.
    UsageError where it cannot be run."""
    binary = ob_tool.find_built("phase4_predict", predictor)
    with tempfile.TemporaryDirectory() as scratch:
        path = pathlib.Path(scratch) / "trace.calibration.json"
        path.write_text(json.dumps(cal))
        least = ["--ddp-min-cap-mb", f"{least_cap_mb:g}"] if least_cap_mb > 0 else []
        done = subprocess.run([binary, "--calibration", str(path), "--ranks", str(world), "--links", "ib400", *least,
                               "--csv", str(pathlib.Path(scratch) / "p.csv")], capture_output=True, text=True,
                              timeout=600)
        if done.returncode:
            raise ob_tool.UsageError(f"phase4_predict: {done.stderr.strip()[:200]}")
        rows = pd.read_csv(pathlib.Path(scratch) / "p.csv")
        if rows.empty:  # a layout it plans nothing for (3 ranks of one node, say)
            raise ob_tool.UsageError(f"phase4_predict planned no bucket cap for {world} ranks")
        return rows.iloc[0]


def advise(traces, stats, world, predictor=None):
    """The advice as a dict (cap, predicted step, its basis and a sentence), or None with the reason it cannot be
    given, for the first rank whose trace has what the model needs."""
    if world < 2:
        return None
    for trace in traces:
        cal, fit = calibration(trace, stats, world)
        if cal is None:
            continue
        mine = [s for s in stats if s.rank == trace.rank]
        busy = gpu_busy(mine)
        least = DEFAULT_CAP_MB if busy < HOST_PACED else 0.0
        try:
            row = predicted_row(cal, world, least, predictor)
        except ob_tool.UsageError as error:
            return {"sentence": f"No bucket advice: {error}"}
        alpha, beta = fit
        traced = float(np.median([s.step_ms for s in mine]))
        cap, predicted = float(row["ddp_bucket_cap_mb"]), float(row["ddp_predicted_ms"])
        slowdown = cal["strategies"][0]["slowdown"][0]
        paced = (f"; the GPU is busy {100 * busy:.0f} % of the traced step, so its host paces it and the advice keeps "
                 f"to caps of at least DDP's {DEFAULT_CAP_MB:g} MB default (each smaller bucket adds a launch on that "
                 "host, which the model does not charge)") if least else ""
        return {"ddp_bucket_cap_mb": cap, "ddp_predicted_ms": predicted, "traced_step_ms": traced,
                "gradients": cal["model"]["layers"], "alpha_us": alpha * 1e3, "beta_GBps": beta * 1e3 / 1e9,
                "compute_slowdown": slowdown, "rank": trace.rank, "gpu_busy": busy, "least_cap_mb": least,
                "sentence": (f"For DDP, the planner's model expects bucket_cap_mb={cap:g} best: a predicted step of "
                             f"{predicted:.3f} ms (traced: {traced:.3f} ms, rank {trace.rank}), from this trace's "
                             f"backward compute of {cal['model']['layers']} gradients, its all-reduces' fit "
                             f"t = {alpha * 1e3:.1f} us + bytes / {beta * 1e3 / 1e9:.1f} GB/s and the compute "
                             f"slowdown beside them ({100 * slowdown:.0f} %){paced}")}
    return {"sentence": "No bucket advice: no rank's trace holds the backward's AccumulateGrad calls with their "
                        "shapes (profile with record_shapes=True) and its all-reduces' sizes"}
