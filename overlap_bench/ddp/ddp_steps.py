"""The steps bench_ddp.py and trace_job.py time, on PyTorch: phase 4's MLP and the transformer as work, each rank's
data, the compute-only step, the manual all-reduce that checks a wrapper's gradients, DDP's bucket assignment with
gradients in one flat buffer per bucket, the wrapped step of DDP or FSDP2, and its capture in a CUDA graph; each timed
with CUDA events after warm-up, the slowest rank's per iteration, with the wrapped step's optimizer and zero_grad."""
import contextlib
import copy
import math
import pathlib
import sys

import numpy as np

from overlap_bench.core import ob_metrics

try:
    import torch
    import torch.distributed as dist
    from torch import nn
except ImportError:  # bench_ddp.py still checks its arguments, then says what is missing
    torch = dist = nn = None


def make_model(hidden, layers, device=None):
    linears = [nn.Linear(hidden, hidden, bias=False, device=device) for _ in range(layers)]
    return nn.Sequential(*[m for linear in linears for m in (linear, nn.ReLU())][:-1])


class Mlp:
    """Phase 4's model: L bias-free square layers, ReLU between, MSE against a fixed target."""

    def __init__(self, text):
        self.hidden, self.layers, self.batch = map(int, text.split(","))
        self.label = text
        self.tag = text.replace(",", "x")  # in file names
        self.keys = {"hidden": self.hidden, "layers": self.layers, "batch": self.batch}
        self.grad_bytes = 4.0 * self.layers * self.hidden * self.hidden

    def build(self, device=None):
        return make_model(self.hidden, self.layers, device)

    def data(self, generator):
        x = torch.rand(self.batch, self.hidden, device="cuda", generator=generator) * 2 - 1
        return x, torch.rand(self.batch, self.hidden, device="cuda", generator=generator) * 2 - 1

    @staticmethod
    def loss(model, inputs, targets):
        return nn.functional.mse_loss(model(inputs), targets)

    @staticmethod
    def shard_units(model):
        return [module for module in model if isinstance(module, nn.Linear)]


class Transformer:
    """A transformer of --model (torch_transformer.py), --seq x --micro-batch tokens per GPU, cross-entropy."""

    def __init__(self, args):
        from overlap_bench.ddp import torch_transformer  # needs torch

        self.module, self.shape, self.blocks = torch_transformer, args.shape, args.blocks
        self.seq, self.micro_batch = args.seq, args.micro_batch
        self.label = f"{args.model} seq {args.seq} x {args.micro_batch}" + \
            (f", {args.blocks} blocks" if args.blocks else "")
        self.tag = f"{pathlib.Path(args.model).name.replace('.json', '')}-seq{args.seq}x{args.micro_batch}" + \
            (f"-{args.blocks}blocks" if args.blocks else "")  # in file names
        # As phase 4's rows: layers counts the tensors with a gradient (its backward steps), batch the tokens.
        tensors = torch_transformer.Transformer(self.shape, self.blocks, device="meta").gradient_tensors()
        self.keys = {"model": args.model, "seq": args.seq, "micro_batch": args.micro_batch,
                     "blocks": args.blocks or self.shape["layers"], "hidden": self.shape["hidden"],
                     "layers": len(tensors), "batch": args.seq * args.micro_batch}
        self.grad_bytes = None  # counted when the model is built

    def build(self, device=None):
        model = self.module.Transformer(self.shape, self.blocks, device)
        self.grad_bytes = 4.0 * sum(p.numel() for p in model.parameters())
        return model

    def data(self, generator):
        shape = (self.micro_batch, self.seq)
        return (torch.randint(0, self.shape["vocab"], shape, device="cuda", generator=generator),
                torch.randint(0, self.shape["vocab"], shape, device="cuda", generator=generator))

    def loss(self, model, inputs, targets):
        return self.module.next_token_loss(model, inputs, targets)

    @staticmethod
    def shard_units(model):
        return model.shard_units()


MOST_MIN_TIME_ITERS = 1000  # common/iteration.hpp's kMostMinTimeIters


def timed_iters(iters, min_time_ms, warmup_ms):
    """The timed iterations as the binaries choose them (common/iteration.cpp, timed_iters): with a minimum time,
    ceil(min_time_ms / the median of the last 3 warm-up times), between `iters` and max(iters, 1000); else `iters`."""
    if min_time_ms <= 0 or not warmup_ms:
        return iters
    step_ms = max(float(np.median(warmup_ms[-3:])), 1e-6)
    return int(min(max(math.ceil(min_time_ms / step_ms), iters), max(iters, MOST_MIN_TIME_ITERS)))


def pass_iters(iters, passes, k):
    """Pass k's share of `iters` (the first iters mod passes passes one more), as phase 4's run_passes splits them
    (METRICS.md, "Passes")."""
    return iters // passes + (1 if k < iters % passes else 0)


def pass_share(args, passes, k):
    """A copy of `args` with pass k's share of --iters (pass_iters) and of --min-time-ms, as phase 4's run_passes
    splits them (METRICS.md, "Passes")."""
    share = copy.copy(args)
    share.iters = pass_iters(args.iters, passes, k)
    share.min_time_ms = args.min_time_ms / passes
    return share


def event_ms(step):
    """One call of `step` timed by CUDA events, synchronised."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    step()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def timed(step, iters, warmup, min_time_ms=0.0):
    """Per-iteration milliseconds of `step` with CUDA events, after warm-up, each iteration synchronised: `iters`
    of them, or (min_time_ms > 0) as many as fill that time by the warm-up's step, the largest count of any rank."""
    warmup_ms = [event_ms(step) for _ in range(warmup)]
    torch.cuda.synchronize()
    count = torch.tensor([timed_iters(iters, min_time_ms, warmup_ms)], device="cuda", dtype=torch.int64)
    dist.all_reduce(count, op=dist.ReduceOp.MAX)  # every rank the same count: slowest() pairs the iterations
    times = []
    for _ in range(int(count.item())):
        dist.barrier()
        times.append(event_ms(step))
    return times


def slowest(times):
    """Element-wise max over ranks: the slowest rank's time of each iteration."""
    tensor = torch.tensor(times, device="cuda", dtype=torch.float64)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return tensor.tolist()


def stats(times):
    """A row's statistics over its iterations, as the binaries' summary writes them (common/summary.cpp): the
    median's 95 % interval over the iterations (relative half-width) and `unstable` above ob_metrics' threshold."""
    t = np.asarray(times, dtype=float)
    rel = ob_metrics.median_ci_rel(t)
    return {"time_ms_p50": float(np.percentile(t, 50)), "time_ms_p95": float(np.percentile(t, 95)),
            "time_ms_min": float(t.min()), "time_ms_max": float(t.max()), "time_ms_mean": float(t.mean()),
            "time_ms_stddev": float(t.std(ddof=1)) if len(t) > 1 else 0.0, "time_ms_p50_ci_rel": rel,
            "unstable": int(rel > ob_metrics.UNSTABLE_CI_REL)}


def ddp_buckets(sizes, first_cap_bytes, cap_bytes):
    """DDP's bucket assignment (torch's compute_bucket_assignment_by_size, one dtype and device): gradients in
    backward order (`sizes` in bytes, last layer first) fill a bucket until it holds at least its cap, then the next
    begins; the first bucket's cap is DDP's first_bucket_bytes (1 MiB), the others' bucket_cap_mb. Returns lists of
    indices into `sizes`."""
    buckets, current, filled = [], [], 0
    for index, size in enumerate(sizes):
        current.append(index)
        filled += size
        if filled >= (first_cap_bytes if not buckets else cap_bytes):
            buckets.append(current)
            current, filled = [], 0
    if current:
        buckets.append(current)
    return buckets


def optimizer_options(args):
    """The optimizer settings of every mode of one system, so that compute-only, seq and the wrapped step do the same
    update: fused SGD for the expert DDP, foreach for FSDP2 (fused SGD takes no DTensor), defaults for --default."""
    return {"lr": args.lr, **({} if args.default else {"foreach": True} if args.fsdp else {"fused": True})}


def fresh_model(args, work):
    """The configuration's model with the seeded initial weights, the same on every rank: built on the GPU (the
    seeded CUDA generator), not on the host and copied (a host-built 8-block llama3-8b took tens of seconds)."""
    torch.manual_seed(args.seed)
    return work.build("cuda")


class Step:
    """One training step of a configuration on this rank's data: zero_grad, the loss's backward, the update."""

    def __init__(self, work, inputs, targets, set_to_none):
        self.work, self.inputs, self.targets, self.set_to_none = work, inputs, targets, set_to_none

    def backward(self, model):
        self.work.loss(model, self.inputs, self.targets).backward()

    def of(self, model, optimizer):
        def step():
            optimizer.zero_grad(set_to_none=self.set_to_none)
            self.backward(model)
            optimizer.step()
        return step


def graph_stream(graph):
    """Under --graph, the side stream DDP's capture needs its job built, warmed up and captured on (graphed)."""
    return torch.cuda.stream(torch.cuda.Stream()) if graph else contextlib.nullcontext()


def graphed(step, eager=3):
    """`step` captured once in a CUDA graph, returned as its replay: `eager` steps, then the capture, on a side stream
    unless one is current (DDP is built, warmed up by 11 steps and captured on one: PyTorch's CUDA graphs notes, "Usage
    with DistributedDataParallel"). A zero_grad(set_to_none=True) inside is the host's alone: the capture's backward
    writes its gradients anew, as the eager step's does, and each replay writes those."""
    current = torch.cuda.current_stream()
    stream = torch.cuda.Stream() if current == torch.cuda.default_stream() else current
    stream.wait_stream(current)
    with torch.cuda.stream(stream):
        for _ in range(eager):
            step()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            step()
    current.wait_stream(stream)
    return graph.replay


def compute_rows(args, rank, model, optimizer, step):
    """{mode: per-iteration times} of the compute-only step (no wrapper), and of the same step replayed from a CUDA
    graph (compute-graph: forward, backward and update without launch gaps; skipped with a message where it fails).
    With --graph the replayed step is the compute-only one (mode compute)."""
    eager = step.of(model, optimizer)
    rows = {} if args.graph else {"compute": timed(eager, args.iters, args.warmup, args.min_time_ms)}
    try:
        replay = graphed(eager)
        rows["compute" if args.graph else "compute-graph"] = timed(replay, args.iters, args.warmup, args.min_time_ms)
        # Its pool holds a step's activations (36 GB for 8 llama3-8b blocks at seq 4096): freed for the wrapped runs.
        del replay
        torch.cuda.empty_cache()
    except RuntimeError as error:  # report, do not fail the comparison (but where the graph is the comparison)
        if args.graph:
            raise
        if rank == 0:
            print(f"bench_ddp: compute-graph skipped: {error}", file=sys.stderr)
    return rows


def manual_gradients(args, work, step, world, weights=None):
    """One backward's gradients on a model no wrapper has touched (none of their hooks run), at the initial weights (or
    at `weights`), all-reduced and averaged by hand: what a wrapper's gradients are checked against."""
    fresh = fresh_model(args, work)
    with torch.no_grad():
        for mine, theirs in zip(fresh.parameters(), weights or []):
            mine.copy_(theirs)
    step.backward(fresh)
    manual = [p.grad for p in fresh.parameters()]
    del fresh  # its weights; the gradients stay
    for g in manual:
        dist.all_reduce(g)
        g.div_(world)
    return manual


def relative_error(model, gradient, manual):
    """The largest relative error of `model`'s gradients (`gradient(p)`) against `manual`'s."""
    return max(((gradient(p) - g).norm() / g.norm().clamp_min(1e-30)).item()
               for p, g in zip(model.parameters(), manual))


def replay_error(args, work, step, world, replay, wrapped, gradient):
    """A captured wrapped step's replay: its gradients against a manual all-reduce at the weights it started from."""
    weights = [p.detach().clone() for p in wrapped.parameters()]
    replay()
    return relative_error(wrapped, gradient, manual_gradients(args, work, step, world, weights))


def gradient_error(step, model, gradient, manual):
    """One backward of the wrapped `model`: the largest relative error of its gradients (`gradient(p)`)."""
    step.backward(model)
    return relative_error(model, gradient, manual)


def bucket_views(backward_order, kind, setting):
    """The run's buckets, as flat buffers the gradients are views of (as DDP's gradient_as_bucket_view keeps them:
    the backward accumulates into the buckets, each all-reduced where it lies, with no copy): DDP's assignment at its
    cap, FSDP2's one group per layer. Returns (groups of indices into `backward_order`, flat buffers)."""
    if kind == "ddp":
        groups = ddp_buckets([p.numel() * p.element_size() for p in backward_order], 1 << 20, setting * (1 << 20))
    else:
        groups = [[i] for i in range(len(backward_order))]
    flats = [torch.zeros(sum(backward_order[i].numel() for i in g), device="cuda") for g in groups]
    for group, flat in zip(groups, flats):
        for i, view in zip(group, flat.split([backward_order[i].numel() for i in group])):
            backward_order[i].grad = view.view_as(backward_order[i])
    return groups, flats


def wrap(work, kind, setting, expert, model):
    """`model` under DDP at bucket_cap_mb `setting` (expert: gradient_as_bucket_view, static_graph), or FSDP2 with
    fully_shard on every unit and the model (reshard_after_forward `setting`). Returns (the wrapped model, how to read
    one parameter's whole gradient)."""
    if kind == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for module in work.shard_units(model):
            fully_shard(module, reshard_after_forward=bool(setting))
        fully_shard(model, reshard_after_forward=bool(setting))
        return model, lambda p: p.grad.full_tensor()
    kwargs = {"bucket_cap_mb": setting, **({"gradient_as_bucket_view": True, "static_graph": True} if expert else {})}
    return nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()], **kwargs), \
        lambda p: p.grad


def wrapped_run(args, work, model, optimizer, step, manual, world, kind, setting):
    """One wrapped run: seq (backward into the run's bucket views, then each bucket all-reduced in place and
    averaged) and comm (those all-reduces alone) on the unwrapped model, unless --no-isolated; then a fresh model
    wrapped, its gradients checked, its step timed (overlap); with --graph each of them captured in a CUDA graph and
    replayed, the replay's gradients checked too. Returns ((kind, setting, {mode: this rank's
    per-iteration times}, buckets),
    the gradients' largest relative error)."""
    groups, flats = bucket_views(list(reversed(list(model.parameters()))), kind, setting)

    def allreduce_buckets():
        for flat in flats:
            dist.all_reduce(flat)

    def seq_step():
        optimizer.zero_grad(set_to_none=False)  # zeroes the bucket views in place (DDP zeroes its buckets)
        step.backward(model)
        for flat in flats:
            dist.all_reduce(flat)
            flat.div_(world)  # the average, as DDP computes
        optimizer.step()

    def as_timed(run, eager=3):
        return graphed(run, eager) if args.graph else run  # --graph: the run's CUDA graph replayed

    modes = {} if args.no_isolated else {
        "seq": timed(as_timed(seq_step), args.iters, args.warmup, args.min_time_ms),
        "comm": timed(as_timed(allreduce_buckets), args.iters, args.warmup, args.min_time_ms)}
    wrapped, gradient = wrap(work, kind, setting, not args.default, fresh_model(args, work))
    error = gradient_error(step, wrapped, gradient, manual)
    wrapped_optimizer = torch.optim.SGD(wrapped.parameters(), **optimizer_options(args))
    wrapped_step = as_timed(step.of(wrapped, wrapped_optimizer), eager=11)
    if args.graph:
        error = max(error, replay_error(args, work, step, world, wrapped_step, wrapped, gradient))
    modes["overlap"] = timed(wrapped_step, args.iters, args.warmup, args.min_time_ms)
    return (kind, setting, modes, len(groups)), error
