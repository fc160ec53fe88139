#!/usr/bin/env python3
"""PyTorch DDP on exactly phase 4's model, for side-by-side comparison: L bias-free Linear(H, H) layers with ReLU
between them, batch B per GPU, MSE loss, fp32 weights, TF32 as phase 4's --tf32, bucket_cap_mb as --bucket-mb.

Launch with torchrun, one process per GPU:
  torchrun --nproc_per_node=2 scripts/bench_ddp.py --configs 4096,16,512 4096,16,8192 --csv ddp.csv

Modes, timed with CUDA events after warm-up (median over iterations of the slowest rank): compute (no DDP; and
compute-graph, the same step replayed from a CUDA graph: GPU-only compute time), overlap (DDP), seq (backward,
then an all-reduce of each gradient), comm (those all-reduces alone), and the derived ideal. Each configuration
runs with expert settings (system pytorch-ddp: gradient_as_bucket_view, static_graph, high-priority NCCL stream
through TORCH_NCCL_HIGH_PRIORITY=1, fused SGD, zero_grad(set_to_none=True)) unless --default (system
pytorch-ddp-default). Several --bucket-mb values give one overlap row each (the best is the one to compare with).
--fsdp runs PyTorch FSDP2 instead (system pytorch-fsdp2: fully_shard on every layer and the model, eager, with and
without resharding after the forward; one overlap row each, column reshard_after_forward). DDP's and FSDP2's
gradients are checked against a manual all-reduce of the same step's gradients. Writes phase 4's summary columns.
"""
import argparse
import json
import math
import os
import pathlib
import socket
import sys
import time

import ob_csv
import ob_metrics

try:
    import torch
    import torch.distributed as dist
    from torch import nn
except ImportError:  # the arguments are still checked; main() then says what is missing
    torch = dist = nn = None


# The summary columns that describe a configuration (beside system, phase, ranks, chunks, iters), named in the
# metadata as the binaries name theirs.
CONFIG_KEYS = ["hidden", "layers", "batch", "bucket_mb", "first_bucket_mb", "grad_mb", "tf32", "clock",
               "reshard_after_forward"]


def parse_args():
    parser = ob_csv.ArgumentParser(description=ob_csv.describe(__doc__))
    parser.add_argument("--configs", nargs="+", default=["4096,16,512"], help="hidden,layers,batch per rank")
    parser.add_argument("--bucket-mb", type=float, nargs="+", default=[25.0],
                        help="DDP bucket_cap_mb; several values: one overlap row each")
    parser.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=True,
                        help="GEMMs on TF32 tensor cores, as phase 4's --tf32 (default: on)")
    parser.add_argument("--default", action="store_true", help="DDP's default settings instead of the expert ones")
    parser.add_argument("--fsdp", action="store_true", help="PyTorch FSDP2 (fully_shard per layer) instead of DDP")
    parser.add_argument("--iters", type=int, default=20, help="timed iterations per mode (default: 20)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed iterations before them (default: 5)")
    parser.add_argument("--lr", type=float, default=0.01, help="SGD learning rate (default: 0.01)")
    parser.add_argument("--seed", type=int, default=1234, help="seed of the weights and data (default: 1234)")
    parser.add_argument("--csv", required=True, help="summary CSV to write (rank 0)")
    args = parser.parse_args()
    for text in args.configs:
        parts = text.split(",")
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
            parser.error(f"--configs: '{text}' is invalid: hidden,layers,batch as positive whole numbers")
    checks = [("--iters", args.iters, args.iters >= 1, "at least 1"),
              ("--warmup", args.warmup, args.warmup >= 0, "at least 0"),
              ("--bucket-mb", " ".join(map(str, args.bucket_mb)),
               all(math.isfinite(mb) and mb > 0 for mb in args.bucket_mb), "numbers > 0"),
              ("--fsdp", "on", not (args.fsdp and args.default), "not with --default"),
              ("--lr", args.lr, math.isfinite(args.lr) and args.lr >= 0, "a number >= 0"),
              ("--seed", args.seed, args.seed >= 0, "at least 0")]
    for option, value, ok, allowed in checks:
        if not ok:
            parser.error(f"{option}: '{value}' is invalid: {allowed}")
    csv = pathlib.Path(args.csv)
    if csv.suffix != ".csv" or csv.is_dir():
        parser.error(f"--csv: '{args.csv}' is invalid: a .csv file path")
    if not csv.resolve().parent.is_dir() or not os.access(csv.resolve().parent, os.W_OK):
        parser.error(f"--csv: '{args.csv}' is invalid: its directory must exist and be writable")
    return args


def make_model(hidden, layers):
    modules = []
    for index in range(layers):
        modules.append(nn.Linear(hidden, hidden, bias=False))
        if index < layers - 1:
            modules.append(nn.ReLU())
    return nn.Sequential(*modules)


def timed(step, iters, warmup):
    """Per-iteration milliseconds of `step` with CUDA events, after warm-up, each iteration synchronised."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def slowest(times):
    """Element-wise max over ranks: the slowest rank's time of each iteration."""
    tensor = torch.tensor(times, device="cuda", dtype=torch.float64)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return tensor.tolist()


def stats(times):
    t = torch.tensor(times, dtype=torch.float64)
    return {"time_ms_p50": t.quantile(0.5).item(), "time_ms_p95": t.quantile(0.95).item(),
            "time_ms_min": t.min().item(), "time_ms_max": t.max().item(), "time_ms_mean": t.mean().item(),
            "time_ms_stddev": t.std().item() if len(times) > 1 else 0.0}


def run_config(args, hidden, layers, batch, rank, world):
    torch.manual_seed(args.seed)  # identical initial weights on every rank
    model = make_model(hidden, layers).cuda()
    generator = torch.Generator(device="cuda").manual_seed(args.seed * 1000003 + 17 * (rank + 1))
    x = torch.rand(batch, hidden, device="cuda", generator=generator) * 2 - 1  # each rank's data differs
    target = torch.rand(batch, hidden, device="cuda", generator=generator) * 2 - 1
    loss_fn = nn.MSELoss()
    params = list(model.parameters())
    # Every mode steps with the same optimizer, gradients zeroed in place each step (as DDP's loop does).
    optimizer = torch.optim.SGD(params, lr=args.lr)

    def compute_step():
        optimizer.zero_grad(set_to_none=False)
        loss_fn(model(x), target).backward()
        optimizer.step()

    def allreduce_grads():
        for p in reversed(params):  # backward order, as the gradients become ready
            dist.all_reduce(p.grad)

    def seq_step():
        optimizer.zero_grad(set_to_none=False)
        loss_fn(model(x), target).backward()
        allreduce_grads()
        torch._foreach_div_([p.grad for p in params], world)  # the average, as DDP computes
        optimizer.step()

    rows = {}
    for p in params:
        p.grad = torch.zeros_like(p)
    rows["compute"] = timed(compute_step, args.iters, args.warmup)
    rows["seq"] = timed(seq_step, args.iters, args.warmup)
    rows["comm"] = timed(allreduce_grads, args.iters, args.warmup)

    # compute from a CUDA graph: forward, backward and update replayed without launch gaps.
    graph_times = None
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                compute_step()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            compute_step()
        graph_times = timed(graph.replay, args.iters, args.warmup)
    except RuntimeError as error:  # report, do not fail the comparison
        if rank == 0:
            print(f"bench_ddp: compute-graph skipped: {error}", file=sys.stderr)
    if graph_times:
        rows["compute-graph"] = graph_times

    # Check first: one DDP (or FSDP2) backward gives the same gradients as a manual all-reduce of the local ones
    # (computed on a model no wrapper has touched, so none of their hooks run).
    fresh = fresh_model(args, hidden, layers)
    loss_fn(fresh(x), target).backward()
    manual = [p.grad for p in fresh.parameters()]
    for g in manual:
        dist.all_reduce(g)
        g.div_(world)
    overlap, worst = {}, 0.0

    def check(model, gradient):
        """One backward of the wrapped `model`: its gradients against the manual ones (largest relative error)."""
        loss_fn(model(x), target).backward()
        return max(((gradient(p) - g).norm() / g.norm().clamp_min(1e-30)).item()
                   for p, g in zip(model.parameters(), manual))

    def wrapped_step(model, optimizer):
        def step():
            optimizer.zero_grad(set_to_none=not args.default)
            loss_fn(model(x), target).backward()
            optimizer.step()
        return step

    if args.fsdp:
        from torch.distributed.fsdp import fully_shard

        for reshard in (False, True):
            model = fresh_model(args, hidden, layers)
            for module in model:
                if isinstance(module, nn.Linear):
                    fully_shard(module, reshard_after_forward=reshard)
            fully_shard(model, reshard_after_forward=reshard)
            worst = max(worst, check(model, lambda p: p.grad.full_tensor()))
            optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, foreach=True)
            overlap[("fsdp", int(reshard))] = timed(wrapped_step(model, optimizer), args.iters, args.warmup)
    else:
        for bucket_mb in args.bucket_mb:
            kwargs = {"bucket_cap_mb": bucket_mb}
            if not args.default:
                kwargs.update(gradient_as_bucket_view=True, static_graph=True)
            ddp = nn.parallel.DistributedDataParallel(fresh_model(args, hidden, layers),
                                                      device_ids=[torch.cuda.current_device()], **kwargs)
            worst = max(worst, check(ddp, lambda p: p.grad))
            optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, fused=not args.default)
            overlap[("ddp", bucket_mb)] = timed(wrapped_step(ddp, optimizer), args.iters, args.warmup)
    results = {mode: stats(slowest(times)) for mode, times in rows.items()}
    return results, {key: stats(slowest(times)) for key, times in overlap.items()}, worst


def fresh_model(args, hidden, layers):
    """Phase 4's model with the seeded initial weights, the same on every rank."""
    torch.manual_seed(args.seed)
    return make_model(hidden, layers).cuda()



def main():
    args = parse_args()
    if torch is None:
        print("bench_ddp: PyTorch is not installed (python3 -m pip install torch)", file=sys.stderr)
        return 77
    if not args.default:
        os.environ.setdefault("TORCH_NCCL_HIGH_PRIORITY", "1")  # read when the process group is created
    if not torch.cuda.is_available():
        print("bench_ddp: no CUDA device available", file=sys.stderr)
        return 77
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    system = "pytorch-fsdp2" if args.fsdp else "pytorch-ddp-default" if args.default else "pytorch-ddp"
    lines, failures = [], []
    for text in args.configs:
        hidden, layers, batch = map(int, text.split(","))
        if rank == 0:
            print(f"bench_ddp: {system} {text}", file=sys.stderr, flush=True)
        results, overlaps, worst = run_config(args, hidden, layers, batch, rank, world)
        if not worst <= 1e-5:  # NaN fails too
            failures.append(f"{text}: {system} gradients differ from a manual all-reduce by {worst:.3g} (relative)")
        base = {"system": system, "phase": "phase4", "ranks": world, "chunks": 0, "iters": args.iters,
                "hidden": hidden, "layers": layers, "batch": batch, "bucket_mb": math.nan,
                "first_bucket_mb": math.nan, "grad_mb": 4.0 * layers * hidden * hidden / (1 << 20),
                "tf32": int(args.tf32), "clock": "cuda_event", "reshard_after_forward": math.nan,
                "ddp_grad_rel_error": worst}
        t_seq, t_comp = results["seq"]["time_ms_p50"], results["compute"]["time_ms_p50"]
        t_comm = results["comm"]["time_ms_p50"]
        for (kind, setting), values in overlaps.items():  # the formulas of METRICS.md, shared with the tests
            knob = {"bucket_mb": setting, "first_bucket_mb": 1.0} if kind == "ddp" else {"reshard_after_forward": setting}
            lines.append(dict(base, mode="overlap", **knob, **values,
                              **ob_metrics.overlap_metrics(t_seq, t_comp, t_comm, values["time_ms_p50"])))
        for mode, values in results.items():
            row = dict(base, mode=mode, **values)
            if mode == "comm":
                row["algbw_GBps"] = ob_metrics.algbw_GBps(4.0 * layers * hidden * hidden, t_comm)
                row["busbw_GBps"] = ob_metrics.allreduce_busbw_GBps(row["algbw_GBps"], world)
            lines.append(row)
        ideal = ob_metrics.ideal_ms(t_comp, t_comm)
        lines.append(dict(base, mode="ideal", **{k: ideal for k in results["compute"]}))
    if rank == 0:
        import pandas as pd  # only rank 0 writes

        columns = ["system", "phase", "mode", "ranks", "chunks", "iters", "time_ms_p50", "time_ms_p95",
                   "time_ms_min", "time_ms_max", "time_ms_mean", "time_ms_stddev"]
        frame = pd.DataFrame(lines)
        frame = frame[columns + [c for c in frame.columns if c not in columns]]
        path = pathlib.Path(args.csv)
        temporary = path.with_name(path.name + ".tmp")
        frame.to_csv(temporary, index=False)
        temporary.replace(path)
        meta = {"suite": "overlap-bench", "phase": "bench_ddp", "system": system, "host": socket.gethostname(),
                "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command_line": sys.argv,
                "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                "gpus": [{"gpu_name": torch.cuda.get_device_name(0)}], "ranks": world, "clock": "cuda_event",
                "commit": os.environ.get("OVERLAP_GIT_COMMIT", "unknown"),
                "config_columns": ["system", "phase", "ranks", "chunks", "iters", *CONFIG_KEYS]}
        meta_path = path.with_name(path.stem + ".meta.json")
        meta_path.with_suffix(".tmp").write_text(json.dumps(meta, indent=2) + "\n")
        meta_path.with_suffix(".tmp").replace(meta_path)
        summary = frame[frame["mode"].isin(["compute", "seq", "overlap", "ideal"])]
        print(summary.pivot_table(index=["hidden", "layers", "batch"], columns="mode", values="time_ms_p50",
                                  aggfunc="min").round(3))  # overlap: the best bucket cap or arrangement
        for failure in failures:
            print(f"bench_ddp: check failed: {failure}", file=sys.stderr)
    dist.destroy_process_group()
    return 1 if failures else 0


def cli():
    """The console command (pyproject.toml) and `python3 bench_ddp.py`."""
    raise SystemExit(main())


if __name__ == "__main__":
    cli()
