"""FSDP2 (`fully_shard`) under the probe (a wrappers.py row).

Compute-only steps: before the block every FSDP module gathers its parameters once (outside the timed steps), with
gradient synchronisation and resharding off, and its forward hooks are taken out: the modules then compute on their
gathered, plain parameters as a plain replica of the model would, and launch no collective (FSDP2's hooks, host work
of the wrapper's own, are in the added time as DDP's wrapper is). The optimizer's step sees a zero gradient where the
silenced steps left none on the sharded parameters, so that it does the job's update work. The job's own
set_requires_gradient_sync (its accumulation) is held off meanwhile. After the block the hooks are back in their
order, the flags as they were, the gathered gradients dropped, the parameters resharded. Under a mixed-precision
policy (whose casts the hooks make) the hooks stay in the step, and the result says so (`baseline`).

The tuner's settings, through FSDP2's public setters on the job's own modules (and its own values put back after):
`reshard_after_forward=False` on every block, then on the later half only (whose backward comes first), and
explicit prefetching two blocks ahead in the forward and in the backward.

Its replicas' check compares only the parameters that are not sharded: a shard is its rank's own, and gathering one
through gloo from CUDA tensors (DTensor.full_tensor) crashed a job (round 6). The private attributes it reads are
listed in `requires()`, checked against the running torch when the probe is built. Torch only."""
import contextlib

import torch

from overlap_bench.probe.state import synchronize
from overlap_bench.probe.wrappers import Setting, missing_attributes, register

# A module's forward hook tables (torch.nn.Module's own), saved and put back whole around the silenced steps.
HOOK_TABLES = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks", "_forward_hooks_with_kwargs",
               "_forward_hooks_always_called")
AHEAD = 2  # blocks prefetched ahead by the prefetch settings


def fsdp2_modules(model):
    """The FSDP2 modules of `model` (fully_shard), outermost first; [] where there are none."""
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:
        return []
    return [m for m in model.modules() if isinstance(m, FSDPModule)]


def _state(module):
    return module._get_fsdp_state()


def _group(module):
    return getattr(_state(module), "_fsdp_param_group", None)


def _flags(module):
    """(reshard after forward, reshard after backward) of an FSDP module as fully_shard set them."""
    group = _group(module)
    if group is None:
        return True, True
    return group.post_forward_mesh_info is not None, bool(getattr(group, "reshard_after_backward", True))


def _mixed_precision(module):
    """Whether an FSDP module casts under a mixed-precision policy (in its hooks)."""
    policy = getattr(_state(module), "_mp_policy", None)
    return policy is not None and (policy.param_dtype is not None or policy.output_dtype is not None)


def _held(*_, **__):
    """set_requires_gradient_sync while the probe silences FSDP2: the call is held off (the steps stay silent)."""


@register
class Fsdp2Row:
    name = "fsdp2"
    PLAIN = ("the job's step on FSDP2's parameters gathered beforehand, its hooks out and its collectives off: a "
             "plain replica's work and the job's update")
    HOOKED = ("the job's step with FSDP2's parameters gathered beforehand, its collectives off (its hooks in it: a "
              "mixed-precision policy's casts are theirs)")

    @staticmethod
    def matches(model):
        return bool(fsdp2_modules(model))

    def __init__(self, model, optimizer, called):
        self.model, self.optimizer, self.modules = model, optimizer, fsdp2_modules(model)
        self.hook, self.flags, self.tables = None, [], []
        self.blocks = self.modules[1:]  # the root's blocks, in the order fully_shard met them (the forward's)
        self.plain = self.baseline = None

    def requires(self):
        missing = missing_attributes([(m, "_get_fsdp_state") for m in self.modules])
        if missing:
            return missing
        states = [_state(m) for m in self.modules]
        missing = missing_attributes([(s, a) for s in states for a in (
            "_pre_forward_hook_handle", "_post_forward_hook_handle", "_fsdp_param_group", "_mp_policy",
            "_states_to_forward_prefetch", "_states_to_backward_prefetch")])
        groups = [g for g in (getattr(s, "_fsdp_param_group", None) for s in states) if g is not None]
        missing += missing_attributes([(g, a) for g in groups for a in ("fsdp_params", "post_forward_mesh_info")])
        if not missing:
            self.plain = not any(_mixed_precision(m) for m in self.modules)
            self.baseline = self.PLAIN if self.plain else self.HOOKED
        return sorted(set(missing))

    # The silence of the compute-only steps.
    def enter(self):
        self.flags = [_flags(m) for m in self.modules]
        for m in self.modules:
            m.set_requires_gradient_sync(False, recurse=False)
            m.set_reshard_after_backward(False, recurse=False)
            m.set_reshard_after_forward(False, recurse=False)
            # the user's own accumulation toggles (set_requires_gradient_sync(last)) held off while silenced
            m.set_requires_gradient_sync = _held
        for m in self.modules:
            m.unshard()
        synchronize()
        if self.plain:  # the hooks out: each table kept as it was, to be put back whole
            self.tables = [{name: type(getattr(m, name))(getattr(m, name)) for name in HOOK_TABLES}
                           for m in self.modules]
            for m in self.modules:
                _state(m)._pre_forward_hook_handle.remove()
                _state(m)._post_forward_hook_handle.remove()
        self.hook = self.optimizer.register_step_pre_hook(self._zero_gradients)

    def step(self):
        return contextlib.nullcontext()

    def leave(self):
        self.hook.remove()
        for m, tables in zip(self.modules, self.tables):  # the hooks back, in their order
            for name, table in tables.items():
                getattr(m, name).clear()
                getattr(m, name).update(table)
        self.tables = []
        for m, (forward, backward) in zip(self.modules, self.flags):
            del m.set_requires_gradient_sync  # the class's own again
            m.set_requires_gradient_sync(True, recurse=False)
            m.set_reshard_after_backward(backward, recurse=False)
            m.set_reshard_after_forward(forward, recurse=False)
        with torch.no_grad():
            for group in filter(None, (_group(m) for m in self.modules)):
                for param in group.fsdp_params:  # the gradients the silenced steps kept unsharded
                    unsharded = getattr(param, "_unsharded_param", None)
                    if unsharded is not None:
                        unsharded.grad = None
                    if "unsharded_accumulated_grad" in vars(param):  # an attribute of its own in some versions
                        param.unsharded_accumulated_grad = None
        for m in self.modules:
            m.reshard()
        synchronize()

    def replicated(self):
        return (p.detach() for p in self.model.parameters() if not hasattr(p, "to_local"))

    def _zero_gradients(self, optimizer, *_):
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)

    # The tuner.
    def settings(self):
        n = len(self.blocks)
        if n == 0:
            return []
        found = []
        if any(_flags(b)[0] for b in self.blocks):
            found.append(Setting("reshard_after_forward=False", "fully_shard(block, reshard_after_forward=False) for "
                                 "every block", (("reshard", range(n)),)))
        if n >= 2 and any(_flags(b)[0] for b in self.blocks[n // 2:]):
            found.append(Setting(f"reshard_after_forward=False on the last {n - n // 2} blocks",
                                 f"fully_shard(block, reshard_after_forward=i < {n // 2}) for block i of {n}",
                                 (("reshard", range(n // 2, n)),)))
        if n >= 2:
            found.append(Setting(f"forward prefetch {AHEAD}", f"block[i].set_modules_to_forward_prefetch(block[i+1:"
                                 f"i+{AHEAD + 1}]) for every block", (("forward", AHEAD),)))
            found.append(Setting(f"backward prefetch {AHEAD}", f"block[i].set_modules_to_backward_prefetch(block[max("
                                 f"i-{AHEAD}, 0):i][::-1]) for every block", (("backward", AHEAD),)))
        return found

    def own(self):
        return "fully_shard as called"

    @contextlib.contextmanager
    def apply(self, setting):
        states = [_state(b) for b in self.blocks]
        saved = [(_flags(b)[0], list(s._states_to_forward_prefetch), list(s._states_to_backward_prefetch))
                 for b, s in zip(self.blocks, states)]
        n = len(self.blocks)
        for what, value in setting.options:
            for i, block in enumerate(self.blocks):
                if what == "reshard" and i in value:
                    block.set_reshard_after_forward(False, recurse=False)
                elif what == "forward" and i + 1 < n:
                    block.set_modules_to_forward_prefetch(self.blocks[i + 1:i + 1 + value])
                elif what == "backward" and i > 0:
                    block.set_modules_to_backward_prefetch(self.blocks[max(i - value, 0):i][::-1])
        try:
            yield
        finally:
            for block, state, (reshard, forward, backward) in zip(self.blocks, states, saved):
                block.set_reshard_after_forward(reshard, recurse=False)
                state._states_to_forward_prefetch = forward
                state._states_to_backward_prefetch = backward

    def tune_bytes(self, settings):
        """Device memory the settings hold beyond the job's: blocks kept unsharded between forward and backward."""
        return sum(p.numel() * p.element_size() for p in self.model.parameters())  # a DTensor's numel: the whole

    @contextlib.contextmanager
    def tuning(self, count):
        yield
