"""How the probe silences a data-parallel wrapper for its compute-only steps (overlap_bench.probe), one class a
wrapper, each the same small seam: `enter()` before a block of compute-only steps, `step()` the context of each,
`leave()` after the block, `parameters()` every rank's full parameters (the replicas' check).

- DDP: each step under `no_sync()` (no all-reduce; the forward wrapper is all of DDP left in it).
- FSDP2 (`fully_shard`): before the block every FSDP module gathers its parameters once (outside the timed steps),
  then runs with gradient synchronisation and resharding off: its steps launch no collective. The optimizer's step
  sees a zero gradient where FSDP2 left none (it keeps the unsharded ones), so that it does the job's update work.
  The job's own set_requires_gradient_sync (its accumulation) is held off meanwhile. After the block the flags are as
  they were, the unsharded gradients dropped, the parameters resharded. FSDP2's
  hooks and DTensor parameters stay in the step: its compute-only step carries the wrapper's own host work, which the
  added time then leaves out (said in the result as `baseline`).
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


class Fsdp2Silence:
    name = "fsdp2"
    baseline = "the job's step with FSDP2's parameters gathered beforehand, its collectives off (its hooks in it)"

    def __init__(self, model, optimizer):
        self.model, self.optimizer, self.modules = model, optimizer, fsdp2_modules(model)
        self.hook, self.flags = None, []

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
        self.hook = self.optimizer.register_step_pre_hook(self._zero_gradients)

    def step(self):
        return contextlib.nullcontext()

    def leave(self):
        self.hook.remove()
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
