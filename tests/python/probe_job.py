"""A small job the probe's tests run on the CPU (gloo), two ranks spawned: an MLP with a buffer (BatchNorm) and
dropout (the random number generators), AdamW, each rank its own batches (local gradients differ). `probed` runs the
job under the probe until it is done and saves rank 0's state; `plain` runs the same job's own steps on the same
batches, without the probe and without the batches the probe's compute-only steps took, and saves its state: the two
must be equal bit for bit. `bad` prints each bad use's one line.

`compare` prints whether the two saved states are equal, and the probe's plan. Exit 77 where torch has no gloo.
Options (after the wrapper): --tune [STEPS] (the tuner after the measurement, its plan saved by `probed` for
`plain`), --accumulate N (micro-batches a step, DDP's no_sync or FSDP2's set_requires_gradient_sync on all but the
last), --compile (torch.compile with the aot_eager backend: no C++ compiler needed), --no-reshard (FSDP2's blocks
without resharding after the forward).

`both` runs probed then plain in the same two processes, then compare.

`harm` prints how a refusal on one rank and a failing step are met.

Usage: python3 probe_job.py probed|plain|both|bad|harm|compare OUT_DIR [ddp|fsdp2] [options]
"""
import argparse
import contextlib
import json
import os
import pathlib
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from overlap_bench.probe import api as probe_module


def make(rank, wrapper, options):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.BatchNorm1d(32), torch.nn.ReLU(),
                                torch.nn.Dropout(0.2), torch.nn.Linear(32, 4))
    if wrapper == "fsdp2":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh("cpu", (dist.get_world_size(),))  # the CPU's, where a GPU is present too
        for layer in (model[0], model[4]):
            fully_shard(layer, mesh=mesh, reshard_after_forward=not options.no_reshard)
        wrapped = fully_shard(model, mesh=mesh)
    else:
        # two buckets at least; compiled, dynamo refuses a cap below DDP's first bucket (1 MB)
        wrapped = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=1 if options.compile else 0.01)
    called = torch.compile(wrapped, backend="aot_eager") if options.compile else wrapped
    return wrapped, called, torch.optim.AdamW(wrapped.parameters(), lr=1e-2)


def batch(rank, i, micro=0):
    generator = torch.Generator().manual_seed(1000 * rank + 100000 * micro + i)
    return torch.randn(8, 16, generator=generator), torch.randn(8, 4, generator=generator)


def step(wrapped, called, optimizer, rank, i, options):
    """One step as users write it: micro-batches with the gradient's synchronisation on the last alone."""
    for micro in range(options.accumulate):
        last = micro == options.accumulate - 1
        if options.wrapper == "fsdp2":
            wrapped.set_requires_gradient_sync(last)
        quiet = wrapped.no_sync() if options.wrapper == "ddp" and not last else contextlib.nullcontext()
        with quiet:
            x, y = batch(rank, i, micro)
            (torch.nn.functional.mse_loss(called(x), y) / options.accumulate).backward()
    optimizer.step()
    optimizer.zero_grad()


def state(model, optimizer):
    """The full model and optimizer state (FSDP2's shards gathered), as rank 0 saves it."""
    full = lambda v: v.full_tensor() if hasattr(v, "full_tensor") else v.clone()  # noqa: E731
    inner = getattr(model, "module", model)
    return {"model": {k: full(v) for k, v in inner.state_dict().items()},
            "optimizer": {i: {k: full(v) if torch.is_tensor(v) else v for k, v in s.items()}
                          for i, s in enumerate(optimizer.state.values())}}


def run(rank, mode, out, options):
    """The job probed (its plan saved) or plain (the probed run's plan's training steps alone); rank 0 saves its
    state as OUT/<mode>.pt."""
    torch.manual_seed(123)
    wrapped, called, optimizer = make(rank, options.wrapper, options)
    if mode == "probed":
        probe = probe_module.Probe(called, optimizer, out=out / "probe", verbose=rank == 0,
                                   tune=options.tune is not None, tune_steps=options.tune or 200)
        i = 0
        while not probe.done:
            with probe.step():
                step(wrapped, called, optimizer, rank, i, options)
            i += 1
        result = probe.finish()
        assert i == len(probe.plan) and result["replicas_agree"], result
        if rank == 0:
            (out / "plan.json").write_text(json.dumps(probe.plan))
    else:
        for i, (kind, *_) in enumerate(json.loads((out / "plan.json").read_text())):
            if kind in probe_module.TRAINS:
                step(wrapped, called, optimizer, rank, i, options)
    saved = state(wrapped, optimizer)
    if rank == 0:
        torch.save(saved, out / f"{mode}.pt")
    dist.barrier()


def worker(rank, world, mode, out, store, options):
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    for each in ("probed", "plain") if mode == "both" else (mode,):
        run(rank, each, out, options)
    dist.destroy_process_group()
    # torch's own teardown of FSDP2 over gloo on the CPU aborts now and then at interpreter exit ("terminate called
    # without an active exception", about 1 run in 20 here): the work is saved, so the worker leaves at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def say(line):
    """One line in one write: two ranks share the pipe, so a line is never cut by the other's."""
    os.write(1, (line + "\n").encode())


def harm(rank, world, out, store):
    """Never harming the job: a refusal on one rank alone (its out is a file) raised on both, neither left waiting;
    an exception from the user's own step inside a compute-only step and inside a tuner's setting: the state put
    back, the exception raised again."""
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    options = argparse.Namespace(wrapper="ddp", no_reshard=False, compile=False, accumulate=1)
    wrapped, called, optimizer = make(rank, "ddp", options)
    (out / "file").write_text("x")
    try:
        probe_module.Probe(wrapped, optimizer, out=out / ("file" if rank == 1 else "fine"), verbose=False)
        say(f"rank {rank} refused: no")
    except probe_module.ProbeError as error:
        say(f"rank {rank} refused: {error}")
    probe = probe_module.Probe(wrapped, optimizer, out=out / "probe", verbose=False, tune=True)
    i = 0
    for fail in ("compute", "tune-warmup"):  # each the first step of its block: its state the block's start
        while probe.plan[probe.index][0] != fail:
            with probe.step():
                step(wrapped, called, optimizer, rank, i, options)
            i += 1
        before = [p.detach().clone() for p in wrapped.parameters()]
        try:
            with probe.step():
                step(wrapped, called, optimizer, rank, i, options)
                raise RuntimeError("the user's own step failed")
        except RuntimeError as error:
            same = all(torch.equal(a, b) for a, b in zip(before, wrapped.parameters()))
            say(f"rank {rank} {fail} raised: {error}; state restored: {same}; routed back: "
                f"{'forward' not in vars(wrapped)}")
    dist.barrier()
    sys.stdout.flush()
    os._exit(0)


def bad(out, store):
    """Each bad use, one line each: the model untouched."""
    model = torch.nn.Linear(4, 4)
    before = [p.clone() for p in model.parameters()]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for attempt in ("not wrapped", "world of one", "entered twice", "finish early", "out is a file"):
        try:
            if attempt == "not wrapped":
                probe_module.Probe(model, optimizer, out=out / "a")
            dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1) \
                if not dist.is_initialized() else None
            ddp = torch.nn.parallel.DistributedDataParallel(model)
            if attempt == "world of one":
                probe_module.Probe(ddp, optimizer, out=out / "b")
            probe = probe_module.Probe(ddp, optimizer, out=out / "c", allow_one_rank=True)
            if attempt == "entered twice":
                with probe.step():
                    with probe.step():
                        pass
            if attempt == "finish early":
                probe.finish()
            if attempt == "out is a file":
                (out / "file").write_text("x")
                probe_module.Probe(ddp, optimizer, out=out / "file", allow_one_rank=True)
            print(f"{attempt}: accepted")
        except probe_module.ProbeError as error:
            print(f"{attempt}: {error}")
    print("untouched:", all(torch.equal(a, b) for a, b in zip(before, model.parameters())))


def compare(out):
    probed, plain = (torch.load(out / f"{m}.pt", weights_only=False) for m in ("probed", "plain"))
    a, b = probed["optimizer"], plain["optimizer"]
    print("model equal:", probed["model"].keys() == plain["model"].keys() and
          all(torch.equal(probed["model"][k], plain["model"][k]) for k in plain["model"]))
    print("optimizer equal:", a.keys() == b.keys() and len(a) > 0 and
          all(torch.equal(a[i][k], b[i][k]) for i in a for k in a[i]))
    print("plan:", len(json.loads((out / "plan.json").read_text())), probe_module.PASSES * probe_module.PER_PASS)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("probed", "plain", "both", "bad", "harm", "compare"))
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("wrapper", nargs="?", choices=("ddp", "fsdp2"), default="ddp")
    parser.add_argument("--tune", type=int, nargs="?", const=200)
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--no-reshard", action="store_true")
    options = parser.parse_args()
    mode, out = options.mode, options.out
    if not dist.is_available() or not dist.is_gloo_available():
        sys.exit(77)
    if mode == "compare":
        compare(out)
        return
    out.mkdir(parents=True, exist_ok=True)
    store = tempfile.mktemp(prefix="probe-store-", dir=out)
    if mode == "bad":
        bad(out, store)
        return
    if mode == "harm":
        mp.spawn(harm, args=(2, out, store), nprocs=2, join=True)
        return
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.spawn(worker, args=(2, mode, out, store, options), nprocs=2, join=True)
    if mode == "both":
        compare(out)


if __name__ == "__main__":
    main()
