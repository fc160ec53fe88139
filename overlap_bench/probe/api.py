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

The compute-only step is your own step with no collective (the wrapper's row: ddp_row.py, fsdp2_row.py): under DDP its
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
bootstrap interval; the profiler's perturbation (traced step over unprofiled step); on rank 0, the split of the
added time by the traces (result.py). Files in out/: probe.json, probe.csv (every step), the traces
(job.rank<R>.trace.json.gz, compute-only.rank<R>.trace.json.gz), analysis/ and, tuned, tune.csv.

With tune=True the tuner (tune.py) follows in the same loop: the wrapper row's settings (DDP's bucket cap and bucket
views, FSDP2's resharding and prefetching), each timed against the job's own in interleaved rounds within
`tune_steps` steps (screening every setting, then racing the leading ones), the trained state put back after each of
its blocks; finish() prints the line to paste, or "keep yours".

Bad use is a ProbeError (a ValueError) naming it, raised before any step where it can be, on every rank alike (a
refusal on one rank is every rank's): a model under neither DDP nor FSDP2, a torch whose private attributes the
wrapper's row reads are missing, a world of one rank, a step entered inside another, finish() before the probe is
done, state that fits nowhere. An exception from the user's own step inside the probe puts the state back and is
raised again.
"""
import contextlib
import os
import pathlib
import shutil
import statistics
import sys
import time

import torch
import torch.distributed as dist

import overlap_bench.probe.ddp_row  # noqa: F401 -- the wrapper rows register themselves
import overlap_bench.probe.fsdp2_row  # noqa: F401
import overlap_bench.probe.ranks as ranks
import overlap_bench.probe.result as outcome
import overlap_bench.probe.tune as tune
import overlap_bench.probe.wrappers as wrappers
from overlap_bench.probe.state import Snapshot, Timer, added_interval, free_bytes, sample_ms, synchronize

PASSES = 4  # timed passes, each the job's steps and the compute-only steps in turn
PER_PASS = 3  # steps of each kind in a pass
WARMUP = 4  # the job's steps before anything is timed
WARMUP_COMPUTE = 2  # compute-only steps before anything is timed (their first runs warm up too)
TRACED = 3  # the job's steps the profiler records
TRACED_COMPUTE = 2  # compute-only steps the profiler records, in a trace of their own
MOST_STEPS = 40  # the measurement's own cost: at most this many of the job's steps
MOST_TUNE_STEPS = 10000  # the tuner's budget at most
MARGIN = 1.25  # the state's copy is kept where this many times its bytes are free
TRAINS = ("warmup", "job", "traced", "tune-own-warmup", "tune-own")  # the kinds of step whose update the job keeps
COMPUTE = ("warmup-compute", "compute", "traced-compute")  # compute-only steps: silenced, then the state restored
TRIALS = ("tune-warmup", "tune")  # a tuner's setting's steps: the setting applied, then the state restored
SUPPORTED_TORCH = "2.11 to 2.15"  # the torch versions the probe is tested on (pyproject.toml's ddp extra)


class ProbeError(ValueError):
    """Bad use of the probe: one line naming it; the model is untouched."""


def _unwrapped(model):
    """The wrapped module under a torch.compile wrapper, if any."""
    return getattr(model, "_orig_mod", model)


def plan(passes=PASSES, per_pass=PER_PASS, warmup=WARMUP, traced=TRACED):
    """Every step of the measurement, in order: (kind, pass, -1) with kind one of warmup, warmup-compute, job,
    compute, traced, traced-compute (the tuner's steps follow: tune.plan)."""
    steps = [("warmup", -1)] * warmup + [("warmup-compute", -1)] * WARMUP_COMPUTE
    for p in range(passes):
        order = ("job", "compute") if p % 2 == 0 else ("compute", "job")
        steps += [(kind, p) for kind in order for _ in range(per_pass)]
    steps += [("traced", -1)] * traced + [("traced-compute", -1)] * TRACED_COMPUTE
    return [(kind, p, -1) for kind, p in steps]


def _agreed(error, device):
    """A refusal decided on every rank together: raised on all where one rank refuses, so that no rank is left
    waiting in a collective the others never enter."""
    refused = ranks.any_rank(error is not None, device)
    if error is not None:
        raise error
    if refused:
        raise ProbeError("another rank refused the probe (its reason is on that rank's output); this rank's model "
                         "is untouched")


class Probe:
    """See the module's text. `passes` and `per_pass` set the timed steps (passes x per_pass of each kind);
    `allow_one_rank` lets a one-rank job be probed (its collectives move no data: for trying the probe on one GPU);
    `tune` runs the tuner after the measurement, within `tune_steps` of the job's steps."""

    def __init__(self, model, optimizer, out="ob-probe", passes=PASSES, per_pass=PER_PASS, warmup=WARMUP,
                 traced=TRACED, allow_one_rank=False, verbose=True, tune=False, tune_steps=tune.BUDGET):
        module = _unwrapped(model)
        if not dist.is_initialized():  # no other rank to tell: refused here alone
            self._row(model, module, optimizer)
            raise ProbeError("torch.distributed is not initialised: the probe measures a data-parallel job")
        self.world, self.rank = dist.get_world_size(), dist.get_rank()
        first = next(module.parameters(), None)
        self.device = first.device if first is not None else torch.device("cpu")
        error = None
        try:
            self._check(model, module, optimizer, out, passes, per_pass, warmup, traced, allow_one_rank, tune,
                        tune_steps)
        except ProbeError as refused:
            error = refused
        _agreed(error, self.device)
        self.model, self.module, self.optimizer, self.verbose = model, module, optimizer, verbose
        self.cuda = self.device.type == "cuda"
        self.snapshot = Snapshot(module, optimizer, self.room)
        self.staging = self.out.parent / f".{self.out.name}.probe-staging"
        if self.rank == 0:  # a staging folder a failed probe left: its traces must not mix with this one's
            shutil.rmtree(self.staging, ignore_errors=True)
        dist.barrier()
        self.index, self.inside, self.samples, self.profiler = 0, False, [], None
        self.tuning, self.block = contextlib.ExitStack(), contextlib.ExitStack()
        self.timer = Timer(self.cuda)

    def _check(self, model, module, optimizer, out, passes, per_pass, warmup, traced, allow_one_rank, tuned,
               tune_steps):
        """Every refusal, before any step (this rank's; _agreed makes it every rank's)."""
        self._row(model, module, optimizer)
        missing = self.row.requires()
        if missing:
            raise ProbeError(f"torch {torch.__version__}: the probe's {self.row.name} row reads "
                             f"{', '.join(missing)}, which this torch does not have (the probe is tested on torch "
                             f"{SUPPORTED_TORCH}); nothing was changed")
        if self.world < 2 and not allow_one_rank:
            raise ProbeError("a world of one rank: its collectives move no data, so there is nothing to measure "
                             "(allow_one_rank=True to try the probe on one GPU)")
        for name, value, least, most in (("passes", passes, 2, MOST_STEPS), ("per_pass", per_pass, 1, MOST_STEPS),
                                         ("warmup", warmup, 1, MOST_STEPS), ("traced", traced, 1, MOST_STEPS),
                                         ("tune_steps", tune_steps, 1, MOST_TUNE_STEPS)):
            if not isinstance(value, int) or isinstance(value, bool) or not least <= value <= most:
                raise ProbeError(f"{name}: '{value}' is invalid: an integer from {least} to {most}")
        if not isinstance(tuned, bool):
            raise ProbeError(f"tune: '{tuned}' is invalid: True or False")
        self.plan = plan(passes, per_pass, warmup, traced)
        if len(self.plan) > MOST_STEPS:
            raise ProbeError(f"passes x per_pass: the probe would take {len(self.plan)} steps of the job, more than "
                             f"its {MOST_STEPS}")
        self.out = pathlib.Path(out)
        if self.out.is_symlink() or (self.out.exists() and not self.out.is_dir()):
            raise ProbeError(f"out: '{out}' is a link or a file: the probe writes a folder of its own")
        if self.out.is_dir() and any(self.out.iterdir()):
            raise ProbeError(f"out: '{out}' holds files already: the probe writes a folder of its own")
        need = Snapshot.nbytes(module, optimizer)
        self.room = next((d for d in (self.device, torch.device("cpu")) if free_bytes(d) > MARGIN * need), None)
        if self.room is None:
            raise ProbeError(f"the copy of the model's state that the compute-only steps need ({need / 2**30:.2f} "
                             "GiB) fits neither on its device nor in host memory: the probe cannot restore it")
        self.settings, self.tune_steps, self.rounds, self.race_rounds, self.raced = [], tune_steps, 0, 0, None
        if tuned:
            room = free_bytes(self.device) - (MARGIN * need if self.room == self.device else 0)
            try:
                self.settings, self.rounds, self.race_rounds = tune.prepare(self.row, tune_steps, room / MARGIN)
            except ValueError as refused:
                raise ProbeError(str(refused)) from None
            self.plan += tune.plan(len(self.settings), self.rounds)

    def _row(self, model, module, optimizer):
        """The wrapper's row (wrappers.py), or the refusal of a model no row knows."""
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise ProbeError(f"optimizer: a {type(optimizer).__name__}, not a torch.optim.Optimizer")
        self.row = wrappers.row_for(module, optimizer, model)
        if self.row is None:
            raise ProbeError(f"model: a {type(module).__name__} not wrapped for data parallelism: wrap it in "
                             "torch.nn.parallel.DistributedDataParallel or fully_shard it (FSDP2) before the probe")

    @property
    def done(self):
        return self.index >= len(self.plan)

    def _mode(self, i):
        """What surrounds step i: None (the job's own), "compute" (silenced) or the index of a tuner's setting."""
        if not 0 <= i < len(self.plan):
            return None
        kind, _, setting = self.plan[i]
        return "compute" if kind in COMPUTE else setting if kind in TRIALS else None

    @contextlib.contextmanager
    def step(self):
        """One step of the user's loop: the probe's next step (plan), or the job's own step once it is done."""
        if self.inside:
            raise ProbeError("probe.step() entered inside another probe.step(): one step at a time")
        if self.done:
            yield
            return
        kind, at, setting = self.plan[self.index]
        mode = self._mode(self.index)
        following = self.plan[self.index + 1][0] if self.index + 1 < len(self.plan) else None
        if kind.startswith("tune") and self.index and not self.plan[self.index - 1][0].startswith("tune"):
            self.tuning.enter_context(self.row.tuning(len(self.settings)))
        if mode is not None and self._mode(self.index - 1) != mode:
            self._enter(mode)
        if kind.startswith("traced") and self.plan[self.index - 1][0] != kind:
            self._start_profile(kind)
        self.inside = True
        failed = True
        try:
            with self.row.step() if mode == "compute" else contextlib.nullcontext():
                self.timer.start()
                yield
                self.samples.append((kind, at, setting, self.timer.stop()))
            failed = False
        finally:
            self.inside = False
            if self.profiler is not None and (failed or following != kind):
                self._stop_profile(kind, keep=not failed)
            if mode is not None and (failed or self._mode(self.index + 1) != mode):
                self._leave()
            if kind == "tune" and following != "tune" and not failed:
                self._progress(at, setting)
            self.index += 1
            if not failed and self.done and self.race_rounds and self.raced is None:
                self._race()
            if failed or self.done:
                self.tuning.close()

    def _enter(self, mode):
        """A block of compute-only steps (silenced) or of a tuner's setting (applied): the state copied first."""
        self.snapshot.take()
        if mode == "compute":
            self.row.enter()
            self.block.callback(self.row.leave)
        else:
            self.block.enter_context(self.row.apply(self.settings[mode]))

    def _leave(self):
        self.block.close()
        self.snapshot.restore()

    def _race(self):
        """After the screening rounds: the leading settings (the slowest rank's times, so every rank picks the same)
        get the racing rounds, appended to the plan."""
        synchronize()
        tuned = [(k, r, s, sample_ms(t)) for k, r, s, t in self.samples if k.startswith("tune")]
        times = ranks.slowest([ms for *_, ms in tuned], self.device)
        self.raced = tune.leading([(k, r, s, ms) for (k, r, s, _), ms in zip(tuned, times)], len(self.settings))
        if self.raced:
            self.plan += tune.plan(self.raced, self.race_rounds, seed=1, first=self.rounds)
        if self.rank == 0 and self.verbose:
            named = " and ".join(self.settings[i].key for i in self.raced)
            print(f"probe: tune racing {named} for {self.race_rounds} more rounds" if self.raced else
                  "probe: tune: every setting was resolved slower than yours after screening; no race", flush=True)

    def _progress(self, at, setting):
        """A line per setting tried (rank 0; this rank's medians: the slowest rank's are taken at finish())."""
        if self.rank == 0 and self.verbose:
            print(tune.progress([(k, r, i, sample_ms(t)) for k, r, i, t in self.samples if r == at and i == setting],
                                at, self.rounds + (self.race_rounds if self.raced else 0), self.settings[setting]),
                  flush=True)

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
        slowest = ranks.slowest([sample_ms(s) for *_, s in self.samples], self.device)  # each step's slowest rank
        steps = [(kind, p, s, t) for (kind, p, s, _), t in zip(self.samples, slowest)]
        of = {kind: [t for k, _, _, t in steps if k == kind] for kind in ("job", "compute", "traced")}
        lo, hi = added_interval(of["job"], of["compute"])
        step, alone, traced_step = (statistics.median(of[k]) for k in ("job", "compute", "traced"))
        agree, checked = ranks.replicas_agree(self.row.replicated(), self.device)
        result = {"suite": "overlap-bench", "tool": "probe", "ranks": self.world, "wrapper": self.row.name,
                  "baseline": self.row.baseline,
                  "backend": dist.get_backend(), "commit": outcome.commit() if self.rank == 0 else "",
                  "device": torch.cuda.get_device_name(self.device) if self.cuda else "cpu",
                  "torch": torch.__version__, "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "command_line": sys.argv, "clock": "cuda events" if self.cuda else "host perf_counter",
                  "probe_steps": len(self.plan), "step_ms": step, "compute_only_step_ms": alone,
                  "added_ms": step - alone, "added_ci_lo_ms": lo, "added_ci_hi_ms": hi,
                  "traced_step_ms": traced_step, "perturbation": traced_step / step,
                  "replicas_agree": agree, "replicas_checked": checked,
                  "steps": [{"kind": k, "pass": p, "setting": s, "ms": t} for k, p, s, t in steps]}
        if self.settings:
            result["tune"] = {"budget_steps": self.tune_steps, "steps": sum(1 for k, *_ in self.plan
                                                                            if k.startswith("tune")),
                              "rounds": self.rounds, "race_rounds": self.race_rounds if self.raced else 0,
                              "raced": [self.settings[i].key for i in self.raced or ()], **tune.analyse(
                                  [(k, p, s, t) for k, p, s, t in steps if k.startswith("tune")], self.settings,
                                  self.row.own())}
        if self.rank == 0:
            outcome.write(self.staging, result, steps, self.settings)
        dist.barrier()
        if self.rank == 0:
            result["analysis"] = outcome.analyse(self.staging, result) if self.cuda else None
            if self.out.exists():  # an empty folder the user made (a result was refused at the start)
                self.out.rmdir()
            os.replace(self.staging, self.out)
            if self.verbose:
                for line in outcome.sentences(result):
                    print(line)
        dist.barrier()
        if not agree:
            raise RuntimeError("the replicas disagree after the probe: its restore of the model's state failed")
        return result
