"""The probe: your own data-parallel job measured exactly, from inside its own training loop, with torch alone.

    from overlap_bench.probe import Probe
    probe = Probe(model, optimizer, out="ob-probe")   # model under DDP or FSDP2 (fully_shard); its optimizer
    for batch in loader:
        with probe.step():
            ...your whole step: forward, backward, optimizer.step(), zero_grad()...
        if probe.done:
            break
    result = probe.finish()   # writes out/, prints the verdict on rank 0, returns the analysis (a dict)

Inside your own steps, in this order (at most 40 of them; `Probe.plan` lists them): warm-up (the job's steps, then
compute-only ones); PASSES passes, each the job's steps and its compute-only steps in turn (their order alternating,
so that a drift of the clocks falls on both alike), every step timed by CUDA events on every rank without the
profiler, the slowest rank's time the step's; then the job's steps traced with CUDA activity alone (the profile that
moves a step least), and its compute-only steps traced apart (the split's baseline).

The compute-only step is your own step with no collective (overlap_bench/ddp/probe_wrappers.py): under DDP its
`no_sync()` (its forward wrapper is all of DDP left in it: within 0.6 % of the unwrapped model's step, measured on
one H100); under FSDP2 the parameters gathered once before a block of them, its forward hooks out and its
collectives off: a plain replica's work on the job's own tensors (under a mixed-precision policy its hooks stay in it,
their host work then left out of the added time; probe.json says which, `baseline`). It trains on
local gradients, so the probe keeps a copy of the model's parameters, buffers, gradients and optimizer state (on the
GPU where it fits, else in host memory; refused before any step where neither holds it) and of the random number
generators, and restores them after every block of compute-only steps: the job then trains exactly as it would
have on the batches its own steps took, and the replicas agree bit for bit after finish() (it checks). The batches
the compute-only steps consumed are not trained on.

What finish() measures: the added time, the job's unprofiled step minus its unprofiled compute-only step, with a 95 %
bootstrap interval; the profiler's perturbation (traced step over unprofiled step). On rank 0 it analyses the
traces (ob-analyze, where the suite's trace reader is installed) and splits the measured added time into its parts,
scaled so that they add up to it (METRICS.md, "The probe"). Files in out/: probe.json (the measurement), probe.csv
(every step: kind, pass, the slowest rank's ms), job.rank<R>.trace.json.gz, compute-only.rank<R>.trace.json.gz and
analysis/ (ob-analyze's files with analysis.parts.csv). `ob-analyze out/` analyses a probe's folder again.

Bad use is a ProbeError (a ValueError) naming it, raised before any step where it can be: a model under neither DDP
nor FSDP2, a world of one rank, a step entered inside another, finish() before the probe is done, state that fits
nowhere.
"""
import contextlib
import json
import math
import os
import pathlib
import shutil
import statistics
import sys
import time

import torch
import torch.distributed as dist

from overlap_bench.ddp.probe_wrappers import silence_for
from overlap_bench.ddp.probe_state import Snapshot, Timer, added_interval, free_bytes, sample_ms, synchronize

PASSES = 4  # timed passes, each the job's steps and the compute-only steps in turn
PER_PASS = 3  # steps of each kind in a pass
WARMUP = 4  # the job's steps before anything is timed
WARMUP_COMPUTE = 2  # compute-only steps before anything is timed (their first runs warm up too)
TRACED = 3  # the job's steps the profiler records
TRACED_COMPUTE = 2  # compute-only steps the profiler records, in a trace of their own
MOST_STEPS = 40  # the probe's own cost: at most this many of the job's steps
MARGIN = 1.25  # the state's copy is kept where this many times its bytes are free
TRAINS = ("warmup", "job", "traced")  # the kinds of step whose update the job keeps (the others' is undone)
COMPUTE = ("warmup-compute", "compute", "traced-compute")  # compute-only steps: DDP's no_sync(), then restored


class ProbeError(ValueError):
    """Bad use of the probe: one line naming it; the model is untouched."""


def _unwrapped(model):
    """The DDP module under a torch.compile wrapper, if any."""
    return getattr(model, "_orig_mod", model)


def plan(passes=PASSES, per_pass=PER_PASS, warmup=WARMUP, traced=TRACED):
    """Every step the probe takes, in order: (kind, pass) with kind one of warmup, warmup-compute, job, compute,
    traced, traced-compute."""
    steps = [("warmup", -1)] * warmup + [("warmup-compute", -1)] * WARMUP_COMPUTE
    for p in range(passes):
        order = ("job", "compute") if p % 2 == 0 else ("compute", "job")
        steps += [(kind, p) for kind in order for _ in range(per_pass)]
    steps += [("traced", -1)] * traced + [("traced-compute", -1)] * TRACED_COMPUTE
    return steps


class Probe:
    """See the module's text. `passes` and `per_pass` set the timed steps (passes x per_pass of each kind);
    `allow_one_rank` lets a one-rank job be probed (its collectives move no data: for trying the probe on one GPU)."""

    def __init__(self, model, optimizer, out="ob-probe", passes=PASSES, per_pass=PER_PASS, warmup=WARMUP,
                 traced=TRACED, allow_one_rank=False, verbose=True):
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise ProbeError(f"optimizer: a {type(optimizer).__name__}, not a torch.optim.Optimizer")
        module = _unwrapped(model)
        self.silence = silence_for(module, optimizer)
        if self.silence is None:
            raise ProbeError(f"model: a {type(module).__name__} not wrapped for data parallelism: wrap it in "
                             "torch.nn.parallel.DistributedDataParallel or fully_shard it (FSDP2) before the probe")
        if not dist.is_initialized():
            raise ProbeError("torch.distributed is not initialised: the probe measures a data-parallel job")
        self.world, self.rank = dist.get_world_size(), dist.get_rank()
        if self.world < 2 and not allow_one_rank:
            raise ProbeError("a world of one rank: its collectives move no data, so there is nothing to measure "
                             "(allow_one_rank=True to try the probe on one GPU)")
        for name, value, least in (("passes", passes, 2), ("per_pass", per_pass, 1), ("warmup", warmup, 1),
                                   ("traced", traced, 1)):
            if not isinstance(value, int) or value < least:
                raise ProbeError(f"{name}: '{value}' is invalid: an integer, at least {least}")
        self.plan = plan(passes, per_pass, warmup, traced)
        if len(self.plan) > MOST_STEPS:
            raise ProbeError(f"passes x per_pass: the probe would take {len(self.plan)} steps of the job, more than "
                             f"its {MOST_STEPS}")
        self.out = pathlib.Path(out)
        if self.out.is_symlink() or (self.out.exists() and not self.out.is_dir()):
            raise ProbeError(f"out: '{out}' is a link or a file: the probe writes a folder of its own")
        if self.out.is_dir() and any(self.out.iterdir()):
            raise ProbeError(f"out: '{out}' holds files already: the probe writes a folder of its own")
        self.model, self.module, self.optimizer, self.verbose = model, module, optimizer, verbose
        first = next(module.parameters(), None)
        self.device = first.device if first is not None else torch.device("cpu")
        self.cuda = self.device.type == "cuda"
        need = Snapshot.nbytes(module, optimizer)
        room = next((d for d in (self.device, torch.device("cpu")) if free_bytes(d) > MARGIN * need), None)
        if room is None:
            raise ProbeError(f"the copy of the model's state that the compute-only steps need ({need / 2**30:.2f} "
                             "GiB) fits neither on its device nor in host memory: the probe cannot restore it")
        self.snapshot = Snapshot(module, optimizer, room)
        self.staging = self.out.parent / f".{self.out.name}.probe-staging"
        if self.rank == 0:  # a staging folder a failed probe left: its traces must not mix with this one's
            shutil.rmtree(self.staging, ignore_errors=True)
        dist.barrier()
        self.index, self.inside, self.samples, self.profiler = 0, False, [], None
        self.timer = Timer(self.cuda)

    @property
    def done(self):
        return self.index >= len(self.plan)

    @contextlib.contextmanager
    def step(self):
        """One step of the user's loop: the probe's next step (plan), or the job's own step once it is done."""
        if self.inside:
            raise ProbeError("probe.step() entered inside another probe.step(): one step at a time")
        if self.done:
            yield
            return
        kind, _ = self.plan[self.index]
        previous = self.plan[self.index - 1][0] if self.index else None
        following = self.plan[self.index + 1][0] if self.index + 1 < len(self.plan) else None
        compute = kind in COMPUTE
        if compute and previous not in COMPUTE:
            self.snapshot.take()
            self.silence.enter()
        if kind.startswith("traced") and previous != kind:
            self._start_profile(kind)
        self.inside = True
        failed = True
        try:
            with self.silence.step() if compute else contextlib.nullcontext():
                self.timer.start()
                yield
                self.samples.append((kind, self.plan[self.index][1], self.timer.stop()))
            failed = False
        finally:
            self.inside = False
            last = failed or following != kind
            if self.profiler is not None and last:
                self._stop_profile(kind, keep=not failed)
            if compute and (failed or following not in COMPUTE):
                self.silence.leave()
                self.snapshot.restore()
            self.index += 1

    def _start_profile(self, kind):
        from torch.profiler import ProfilerActivity, profile

        synchronize()
        self.staging.mkdir(parents=True, exist_ok=True)
        activities = [ProfilerActivity.CUDA] if self.cuda else [ProfilerActivity.CPU]
        self.profiler = profile(activities=activities)
        self.profiler.__enter__()

    def _stop_profile(self, kind, keep=True):
        synchronize()
        self.profiler.__exit__(None, None, None)
        if keep:
            name = "job" if kind == "traced" else "compute-only"
            self.profiler.export_chrome_trace(str(self.staging / f"{name}.rank{self.rank}.trace.json.gz"))
        self.profiler = None

    def finish(self):
        """Measures, checks the replicas, writes out/ and (rank 0) prints the verdict; returns the analysis."""
        if not self.done:
            raise ProbeError(f"finish() after {self.index} of the probe's {len(self.plan)} steps: run the loop "
                             "until probe.done")
        synchronize()
        local = torch.tensor([sample_ms(s) for _, _, s in self.samples], dtype=torch.float64,
                             device=self._comm_device())
        dist.all_reduce(local, op=dist.ReduceOp.MAX)  # each step's slowest rank
        times = local.cpu().tolist()
        kinds = [(kind, p) for kind, p, _ in self.samples]
        job = [t for (kind, _), t in zip(kinds, times) if kind == "job"]
        compute = [t for (kind, _), t in zip(kinds, times) if kind == "compute"]
        traced = [t for (kind, _), t in zip(kinds, times) if kind == "traced"]
        lo, hi = added_interval(job, compute)
        step, alone, traced_step = (statistics.median(v) for v in (job, compute, traced))
        agree = self._replicas_agree()
        result = {"suite": "overlap-bench", "tool": "probe", "ranks": self.world, "wrapper": self.silence.name,
                  "baseline": self.silence.baseline,
                  "backend": dist.get_backend(), "commit": _commit() if self.rank == 0 else "",
                  "device": torch.cuda.get_device_name(self.device) if self.cuda else "cpu",
                  "torch": torch.__version__, "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "command_line": sys.argv, "clock": "cuda events" if self.cuda else "host perf_counter",
                  "probe_steps": len(self.plan), "step_ms": step, "compute_only_step_ms": alone,
                  "added_ms": step - alone, "added_ci_lo_ms": lo, "added_ci_hi_ms": hi,
                  "traced_step_ms": traced_step, "perturbation": traced_step / step,
                  "replicas_agree": agree, "steps": [{"kind": k, "pass": p, "ms": t}
                                                     for (k, p), t in zip(kinds, times)]}
        if self.rank == 0:
            self.staging.mkdir(parents=True, exist_ok=True)
            (self.staging / "probe.json").write_text(json.dumps(result, indent=2) + "\n")
            (self.staging / "probe.csv").write_text("kind,pass,ms\n" + "".join(
                f"{k},{p},{t:.6f}\n" for (k, p), t in zip(kinds, times)))
        dist.barrier()
        if self.rank == 0:
            result["analysis"] = _analyse(self.staging) if self.cuda else None
            if self.out.exists():  # an empty folder the user made (a result was refused at the start)
                self.out.rmdir()
            os.replace(self.staging, self.out)
            if self.verbose:
                for line in sentences(result):
                    print(line)
        dist.barrier()
        if not agree:
            raise RuntimeError("the replicas disagree after the probe: its restore of the model's state failed")
        return result

    def _comm_device(self):
        return self.device if dist.get_backend() == "nccl" else torch.device("cpu")

    def _replicas_agree(self):
        """Every rank's parameters bit for bit rank 0's: each broadcast from rank 0 in turn (one parameter's memory)
        and compared; every rank told whether all agreed."""
        device = self._comm_device()
        same = True
        with torch.no_grad():
            for p in self.silence.parameters():
                mine = p.to(device)
                theirs = mine.clone()
                dist.broadcast(theirs, src=0)
                same &= bool(torch.equal(mine.view(torch.uint8) if mine.dim() else mine, theirs.view(torch.uint8)
                                         if theirs.dim() else theirs))
        flag = torch.tensor([0 if same else 1], dtype=torch.int32, device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return int(flag.item()) == 0


def _commit():
    """The suite's commit (ob_tool.commit_id, standard library only), "unknown" where it cannot be told."""
    try:
        from overlap_bench.core import ob_tool

        return ob_tool.commit_id()
    except Exception:  # noqa: BLE001 -- metadata only: the measurement never fails for it
        return "unknown"


def _analyse(folder):
    """ob-analyze on the probe's folder (rank 0): its parts scaled to the measured total; None where the suite's
    trace reader (ijson, pandas) is not installed or the job ran no GPU kernel (a CPU job: no trace to split)."""
    if not any(folder.glob("job.rank*.trace.json.gz")):
        return None
    try:
        from overlap_bench.trace import analyze
    except ImportError as error:
        return {"error": f"the split needs the suite's trace reader ({error.name} is not installed): "
                         f"ob-analyze {folder} later"}
    try:
        parts = analyze.analyse_probe(folder, folder / "analysis")
    except Exception as error:  # noqa: BLE001 -- the measurement stands; the split says why it is missing
        shutil.rmtree(folder / "analysis", ignore_errors=True)
        return {"error": f"the split failed: {str(error).splitlines()[0] if str(error) else type(error).__name__}"}
    return parts


def sentences(result):
    """The probe's verdict in words."""
    lines = [f"probe: {result['ranks']} rank{'s' * (result['ranks'] != 1)} on {result['device']}: the step took "
             f"{result['step_ms']:.3f} ms, its compute-only step {result['compute_only_step_ms']:.3f} ms (medians of "
             f"the slowest rank, unprofiled): data parallelism added {result['added_ms']:.3f} ms "
             f"[{result['added_ci_lo_ms']:.3f}, {result['added_ci_hi_ms']:.3f}] a step "
             f"({100 * result['added_ms'] / result['compute_only_step_ms']:.1f} % of the compute-only step); the "
             f"profiler made the traced step {result['perturbation']:.3f}x the unprofiled one"]
    analysis = result.get("analysis")
    if analysis and "parts" in analysis:
        lines.append("of the added time: " + "; ".join(f"{part['part']} {part['scaled_ms']:.3f} ms"
                                                       for part in analysis["parts"] if part["adds"]) +
                     f" (the trace's parts scaled by {analysis['scale']:.3f} to the measured total)")
    elif analysis and "error" in analysis:
        lines.append(analysis["error"])
    if not result["replicas_agree"]:
        lines.append("the replicas DISAGREE after the probe")
    if not math.isfinite(result["added_ms"]):
        lines.append("no added time measured")
    return lines
