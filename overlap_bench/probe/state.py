"""The probe's state and clocks (overlap_bench.probe): the copy of a model's and optimizer's state that its
compute-only steps change, put back in place; a step's time by CUDA events (or the host clock without a GPU); the
added time's bootstrap interval. Torch only."""
import math
import os
import statistics
import time

import torch

RESAMPLES = 2000


def local(tensor):
    """A tensor's own storage on this rank: a DTensor's (FSDP2's sharded parameters and their state) local shard."""
    return tensor.to_local() if hasattr(tensor, "to_local") else tensor


class Snapshot:
    """A copy of the model's parameters, buffers and gradients, the optimizer's state and the random number
    generators, put back in place (copy_ into the same tensors: a compiled step or a graph keeps its pointers)."""

    def __init__(self, model, optimizer, device):
        self.model, self.optimizer, self.device = model, optimizer, device
        self.tensors, self.copies = [], None  # the state's tensors and their copies, listed by take()

    def _tensors(self):
        for p in self.model.parameters():
            yield local(p.data)
        for b in self.model.buffers():
            yield local(b)
        for state in self.optimizer.state.values():
            for value in state.values():
                if torch.is_tensor(value):
                    yield local(value)

    @staticmethod
    def nbytes(model, optimizer):
        """Bytes the copy needs: parameters (and their gradients, counted alike), buffers, the optimizer's state
        (Adam's two moments where it has none yet)."""
        params = sum(local(p).numel() * p.element_size() for p in model.parameters())
        buffers = sum(local(b).numel() * b.element_size() for b in model.buffers())
        state = sum(local(v).numel() * v.element_size() for s in optimizer.state.values() for v in s.values()
                    if torch.is_tensor(v))
        return 2 * params + buffers + max(state, 2 * params)

    def take(self):
        self.tensors = list(self._tensors())
        self.keys = {id(p) for p in self.optimizer.state}
        self.scalars = [{k: v for k, v in s.items() if not torch.is_tensor(v)} for s in self.optimizer.state.values()]
        self.grads = [None if p.grad is None else p.grad.detach().clone() if hasattr(p.grad, "to_local")
                      else p.grad.detach().to(self.device, copy=True) for p in self.model.parameters()]
        if self.copies is None or [c.shape for c in self.copies] != [t.shape for t in self.tensors]:
            pin = self.device.type == "cpu" and torch.cuda.is_available() and self.tensors and self.tensors[0].is_cuda
            self.copies = [torch.empty(t.shape, dtype=t.dtype, device=self.device, pin_memory=pin)
                           for t in self.tensors]
        for copy, t in zip(self.copies, self.tensors):
            copy.copy_(t, non_blocking=True)
        self.rng = torch.get_rng_state()
        self.cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
        synchronize()

    def restore(self):
        with torch.no_grad():
            for p in [p for p in self.optimizer.state if id(p) not in self.keys]:
                del self.optimizer.state[p]  # state the compute-only steps made
            for t, copy in zip(self.tensors, self.copies):
                t.copy_(copy, non_blocking=True)
            for state, scalars in zip(self.optimizer.state.values(), self.scalars):
                state.update(scalars)
            for p, grad in zip(self.model.parameters(), self.grads):
                if grad is None:
                    p.grad = None
                elif p.grad is None:
                    p.grad = grad.to(p.device, copy=True)
                else:
                    p.grad.copy_(grad)
        torch.set_rng_state(self.rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)
        synchronize()


def synchronize():
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def free_bytes(device):
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 0


class Timer:
    """A step's time: CUDA events on the current stream (recorded, read after the block), or the host clock on a
    job without a GPU."""

    def __init__(self, cuda):
        self.cuda = cuda

    def start(self):
        if self.cuda:
            self.begin = torch.cuda.Event(enable_timing=True)
            self.begin.record()
        else:
            self.begin = time.perf_counter()

    def stop(self):
        if self.cuda:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            return (self.begin, end)
        return (time.perf_counter() - self.begin) * 1e3


def sample_ms(sample):
    return sample[0].elapsed_time(sample[1]) if isinstance(sample, tuple) else sample


def added_interval(job, compute, seed=0, count=RESAMPLES):
    """95 % bootstrap interval of median(job) - median(compute), the two resampled apart."""
    generator = torch.Generator().manual_seed(seed)
    a, b = torch.tensor(job, dtype=torch.float64), torch.tensor(compute, dtype=torch.float64)
    drawn_a = a[torch.randint(len(a), (count, len(a)), generator=generator)].median(dim=1).values
    drawn_b = b[torch.randint(len(b), (count, len(b)), generator=generator)].median(dim=1).values
    differences = (drawn_a - drawn_b).sort().values
    return float(differences[int(0.025 * count)]), float(differences[int(0.975 * count) - 1])


def truth_check(job, compute, probe_added_ms, seed=1):
    """The probe held against the truth (the job's steps and its compute-only steps timed without the probe or the
    profiler, each step synchronised, the slowest rank's): the truth's medians, their difference with its 95 %
    interval, the probe's error against it, and whether it is within 5 % or inside that interval."""
    added = statistics.median(job) - statistics.median(compute)
    lo, hi = added_interval(job, compute, seed=seed)
    error = probe_added_ms / added - 1 if added > 0 else math.nan
    return {"truth_step_ms": statistics.median(job), "truth_compute_ms": statistics.median(compute),
            "truth_added_ms": added, "truth_ci_lo_ms": lo, "truth_ci_hi_ms": hi, "probe_added_ms": probe_added_ms,
            "error": error, "within_5pct": abs(error) <= 0.05 or lo <= probe_added_ms <= hi, "steps": len(job)}


def truth_sentence(check):
    """The check in words, as the example and ob-probe-suite print it."""
    return (f"truth: the job's step {check['truth_step_ms']:.3f} ms, its compute-only step "
            f"{check['truth_compute_ms']:.3f} ms: added {check['truth_added_ms']:.3f} ms "
            f"[{check['truth_ci_lo_ms']:.3f}, {check['truth_ci_hi_ms']:.3f}]; the probe's "
            f"{check['probe_added_ms']:.3f} ms is {100 * check['error']:+.1f} % off "
            f"({'within' if check['within_5pct'] else 'outside'} the 5 % target)")
