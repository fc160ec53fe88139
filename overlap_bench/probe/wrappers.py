"""How the probe silences a data-parallel wrapper for its compute-only steps (overlap_bench.probe), one class a
wrapper, each the same small seam: `enter()` before a block of compute-only steps, `step()` the context of each,
`leave()` after the block, `parameters()` every rank's full parameters (the replicas' check).

- DDP: each step under `no_sync()` (no all-reduce; the forward wrapper is all of DDP left in it).
- FSDP2 (`fully_shard`): before the block every FSDP module gathers its parameters once (outside the timed steps),
  with gradient synchronisation and resharding off, and its forward hooks are taken out: the modules then compute on
  their gathered, plain parameters as a plain replica of the model would, and launch no collective (FSDP2's hooks,
  host work of the wrapper's own that made its step 15 % slower than the unwrapped model's on one H100, are in the
  added time as DDP's wrapper is). The optimizer's step sees a zero gradient where the silenced steps left none on the
  sharded parameters, so that it does the job's update work. The job's own set_requires_gradient_sync (its
  accumulation) is held off meanwhile. After the block the hooks are back in their order, the flags as they were, the
  gathered gradients dropped, the parameters resharded. Under a mixed-precision policy (whose casts the hooks make)
  the hooks stay in the step, and the result says so (`baseline`).
Torch only."""
import contextlib

import torch

from overlap_bench.ddp.probe_state import synchronize


def fsdp2_modules(model):
    """The FSDP2 modules of `model` (fully_shard), outermost first; [] where there are none."""
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:
        return []
    return [m for m in model.modules() if isinstance(m, FSDPModule)]


class DdpSilence:
    name = "ddp"
    baseline = "the job's step under DDP's no_sync()"

    def __init__(self, model, optimizer):
        self.model = model

    def enter(self):
        pass

    def step(self):
        return self.model.no_sync()

    def leave(self):
        pass

    def parameters(self):
        return (p.detach() for p in self.model.parameters())


# A module's forward hook tables (torch.nn.Module's own), saved and put back whole around the silenced steps.
HOOK_TABLES = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks", "_forward_hooks_with_kwargs",
               "_forward_hooks_always_called")


class Fsdp2Silence:
    name = "fsdp2"
    PLAIN = ("the job's step on FSDP2's parameters gathered beforehand, its hooks out and its collectives off: a "
             "plain replica's work and the job's update")
    HOOKED = ("the job's step with FSDP2's parameters gathered beforehand, its collectives off (its hooks in it: a "
              "mixed-precision policy's casts are theirs)")

    def __init__(self, model, optimizer):
        self.model, self.optimizer, self.modules = model, optimizer, fsdp2_modules(model)
        self.hook, self.flags, self.tables = None, [], []
        self.plain = not any(_mixed_precision(m) for m in self.modules)
        self.baseline = self.PLAIN if self.plain else self.HOOKED

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
                state = m._get_fsdp_state()
                state._pre_forward_hook_handle.remove()
                state._post_forward_hook_handle.remove()
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

    def parameters(self):
        return (p.full_tensor() if hasattr(p, "full_tensor") else p.detach() for p in self.model.parameters())

    def _zero_gradients(self, optimizer, *_):
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)


def _held(*_, **__):
    """set_requires_gradient_sync while the probe silences FSDP2: the call is held off (the steps stay silent)."""


def _mixed_precision(module):
    """Whether an FSDP module casts under a mixed-precision policy (in its hooks)."""
    policy = getattr(module._get_fsdp_state(), "_mp_policy", None)
    return policy is not None and (policy.param_dtype is not None or policy.output_dtype is not None)


def _group(module):
    state = module._get_fsdp_state()
    return getattr(state, "_fsdp_param_group", None)


def _flags(module):
    """(reshard after forward, reshard after backward) of an FSDP module as fully_shard set them."""
    group = _group(module)
    if group is None:
        return True, True
    return group.post_forward_mesh_info is not None, bool(getattr(group, "reshard_after_backward", True))


def silence_for(model, optimizer):
    """The wrapper's silence for `model` (DDP, or a module under fully_shard), None for another."""
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        return DdpSilence(model, optimizer)
    if fsdp2_modules(model):
        return Fsdp2Silence(model, optimizer)
    return None
