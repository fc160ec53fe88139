"""DDP under the probe (a wrappers.py row). Compute-only steps: each under DDP's `no_sync()` (its forward wrapper is
all of DDP left in it). The tuner's settings: `bucket_cap_mb` over a ladder around the job's own (1/25, 1/5, 1/2.5,
2 and 4 times it; compiled, none below DDP's first bucket: dynamo refuses it) and `gradient_as_bucket_view` flipped.
`static_graph` is not tried: under no_sync accumulation its reducer fails an internal assertion (torch 2.15), and
whether a job accumulates is not known before its steps.

A setting runs as a trial DDP over the job's own module, built with the job's own options but that one (its process
group, devices, mixed precision and communication hook alike, no broadcast at its start: the replicas are equal): the
user's calls are routed to it (the `forward` of what the user calls, and `no_sync` of the job's DDP, so that its
accumulation is the job's), and back on leaving. The job's DDP is never touched; its autograd hooks stay inert while
its forward does not run. Under torch.compile the trial is compiled with the job's own compiler context, and dynamo's
recompile limit is raised by one per trial while the tuner runs, and each trial is kept (eager, one trial at a time).
Torch only."""
import contextlib
import inspect

import torch

from overlap_bench.probe.wrappers import Setting, missing_attributes, register

LADDER = (1 / 25, 1 / 5, 1 / 2.5, 2.0, 4.0)  # bucket caps tried, as multiples of the job's own
# The job's DDP options a trial copies (attribute of the job's DDP, the constructor's keyword).
COPIED = (("device_ids", "device_ids"), ("output_device", "output_device"), ("dim", "dim"),
          ("broadcast_buffers", "broadcast_buffers"), ("process_group", "process_group"),
          ("find_unused_parameters", "find_unused_parameters"),
          ("gradient_as_bucket_view", "gradient_as_bucket_view"), ("static_graph", "static_graph"),
          ("mixed_precision", "mixed_precision"))


def _nice(mb):
    """A cap as users write it: at most two significant digits."""
    return float(f"{mb:.2g}")


@register
class DdpRow:
    name = "ddp"
    baseline = "the job's step under DDP's no_sync()"

    @staticmethod
    def matches(model):
        return isinstance(model, torch.nn.parallel.DistributedDataParallel)

    def __init__(self, model, optimizer, called):
        self.model, self.called, self.trials = model, called, {}

    def requires(self):
        needed = [(self.model, a) for a, _ in COPIED] + [(self.model, "bucket_bytes_cap"), (self.model, "_comm_hooks")]
        if self.called is not self.model:
            needed.append((self.called, "dynamo_ctx"))
        return missing_attributes(needed)

    # The silence of the compute-only steps.
    def enter(self):
        pass

    def step(self):
        return self.model.no_sync()

    def leave(self):
        pass

    def replicated(self):
        return (p.detach() for p in self.model.parameters())

    # The tuner.
    def own_cap_mb(self):
        return self.model.bucket_bytes_cap / 2**20

    def settings(self):
        own = self.own_cap_mb()
        # compiled, dynamo's DDPOptimizer refuses a cap below DDP's first bucket
        least = torch.distributed._DEFAULT_FIRST_BUCKET_BYTES / 2**20 if self.called is not self.model else 0
        caps = sorted({_nice(own * m) for m in LADDER} - {_nice(own)})
        caps = [c for c in caps if c >= least]
        found = [Setting(f"bucket_cap_mb={c:g}", f"DistributedDataParallel(..., bucket_cap_mb={c:g})",
                         (("bucket_cap_mb", c),)) for c in caps]
        view = not self.model.gradient_as_bucket_view
        found.append(Setting(f"gradient_as_bucket_view={view}",
                             f"DistributedDataParallel(..., gradient_as_bucket_view={view})",
                             (("gradient_as_bucket_view", view),)))
        return found

    def own(self):
        return f"bucket_cap_mb={self.own_cap_mb():.3g}"

    def _trial(self, setting):
        if setting.key not in self.trials:
            options = {keyword: getattr(self.model, attribute) for attribute, keyword in COPIED}
            options["bucket_cap_mb"] = self.own_cap_mb()
            options.update(setting.options)
            accepted = inspect.signature(torch.nn.parallel.DistributedDataParallel).parameters
            if "init_sync" in accepted:
                options["init_sync"] = False
            if "forward_sync_buffers" in accepted:  # broadcast_buffers's new name (the old one warns)
                options["forward_sync_buffers"] = options.pop("broadcast_buffers")
            trial = torch.nn.parallel.DistributedDataParallel(self.model.module, **options)
            for hook, state in self.model._comm_hooks:
                trial.register_comm_hook(state, hook)
            called = trial if self.called is self.model else type(self.called)(trial, self.called.dynamo_ctx)
            self.trials[setting.key] = (trial, called)
        return self.trials[setting.key]

    @contextlib.contextmanager
    def apply(self, setting):
        trial, called = self._trial(setting)
        had = "forward" in vars(self.called)
        saved = vars(self.called).get("forward")
        self.called.forward = called.forward if called is not trial else trial.__call__
        self.model.no_sync = trial.no_sync
        try:
            yield
        finally:
            del self.model.no_sync
            if had:
                self.called.forward = saved
            else:
                del self.called.forward
            if self.called is self.model:  # eager, a trial is cheap to build again: one at a time in memory
                self.trials.pop(setting.key)

    def tune_bytes(self, settings):
        """Device memory the tuner's trials hold at once: one bucket copy of the gradients each (compiled, every
        trial is kept, not compiled again; eager, one at a time)."""
        grads = sum(p.numel() * p.element_size() for p in self.model.parameters() if p.requires_grad)
        return grads * (len(settings) if self.called is not self.model else 1)

    @contextlib.contextmanager
    def tuning(self, count):
        """While the tuner runs: dynamo may compile each trial once (its limit raised by `count`); after it, the
        trials are dropped (their buckets freed, their hooks removed)."""
        config = getattr(getattr(torch, "_dynamo", None), "config", None)
        name = next((n for n in ("recompile_limit", "cache_size_limit") if hasattr(config, n)), None)
        if self.called is not self.model and name:
            before = getattr(config, name)
            setattr(config, name, before + count)
        try:
            yield
        finally:
            if self.called is not self.model and name:
                setattr(config, name, before)
            self.trials.clear()
