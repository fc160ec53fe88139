#!/usr/bin/env python3
"""A small GPT trained under PyTorch DDP (or FSDP2, --fsdp2) with overlap-bench's probe in its loop: the probe's
three lines are marked `# probe`; everything else is an ordinary training script (bf16 autocast, AdamW, gradient
accumulation, torch.compile), written without the suite.

    torchrun --nproc_per_node=2 examples/probe_ddp.py --out ob-probe          # one GPU per rank, NCCL
    torchrun --nproc_per_node=2 examples/probe_ddp.py --tune --out ob-probe   # and the tuner: what to change
    torchrun --nproc_per_node=2 examples/probe_ddp.py --device cpu --out ob-probe   # CPU ranks, gloo

With fewer GPUs than ranks (two ranks on one GPU) NCCL cannot run (one GPU a rank): the collectives then go through
gloo (host memory), said in one line; on a machine without a GPU the ranks run on the CPU, said likewise.

--time-steps N --csv F runs the job alone (no probe), N steps timed after a warm-up, and writes their times as an
overlap-bench summary CSV (one row, mode "overlap"): one contender of ob-compare, to hold the tuner's choice against
fresh processes, one per setting (--bucket-mb, --reshard-after-forward, --prefetch).

--truth N checks the probe after it: N passes of the job's DDP step and of its unwrapped model's step (the same
module called without DDP: no collective, no wrapper), timed in turn without the probe or the profiler, their
difference the truth the probe's added time is held against (written to OUT/truth.json, printed on rank 0). The
truth's steps train on local gradients: the replicas differ after it (the probe's own steps restore them).
"""
import argparse
import contextlib
import json
import os
import pathlib
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from overlap_bench.probe.state import truth_check, truth_sentence
from overlap_bench.probe import Probe  # probe


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
        self.heads = heads

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, c // self.heads).transpose(1, 3).unbind(2)
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.norm2(x))))


class Gpt(nn.Module):
    def __init__(self, vocab, width, layers, heads, context):
        super().__init__()
        self.tokens, self.places = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)

    def forward(self, tokens):
        x = self.tokens(tokens) + self.places(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--context", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=8, help="sequences per rank and micro-batch")
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--bucket-mb", type=float, default=25.0, help="DDP's bucket_cap_mb")
    parser.add_argument("--gradient-as-bucket-view", action="store_true", help="DDP's gradient_as_bucket_view")
    parser.add_argument("--accumulate", type=int, default=1, help="micro-batches per step (no_sync on all but the "
                        "last, as users write it)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the wrapped model")
    parser.add_argument("--fsdp2", action="store_true", help="FSDP2 (fully_shard per block and the whole) instead of "
                        "DDP; --truth's compute-only step then a plain replica of the model")
    parser.add_argument("--reshard-after-forward", choices=("all", "none", "early"), default="all",
                        help="FSDP2's blocks resharded after the forward: all (its default), none, or the earlier "
                        "half only")
    parser.add_argument("--prefetch", choices=("none", "forward", "backward"), default="none",
                        help="FSDP2's explicit prefetching, two blocks ahead (the tuner's setting)")
    parser.add_argument("--tune", action="store_true", help="the probe's tuner after its measurement")
    parser.add_argument("--tune-steps", type=int, default=200, help="the tuner's budget in steps (default 200)")
    parser.add_argument("--time-steps", type=int, default=0, metavar="N", help="no probe: time N steps, --csv")
    parser.add_argument("--csv", help="with --time-steps: the summary CSV to write")
    parser.add_argument("--no-autocast", action="store_true", help="float32 instead of bf16 autocast")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--backend", choices=("nccl", "gloo"), help="default: nccl on cuda, gloo on cpu")
    parser.add_argument("--allow-one-rank", action="store_true", help="probe a one-rank job (trying it on one GPU)")
    parser.add_argument("--truth", type=int, default=0, metavar="N", help="passes of the check after the probe")
    parser.add_argument("--plain-trace", metavar="DIR", help="at the end, trace 3 of the job's steps as the "
                        "tutorials do (CPU and CUDA activity, tensorboard_trace_handler into DIR): for ob-analyze on a "
                        "plain trace and other tools, side by side with the probe")
    parser.add_argument("--out", default="ob-probe", help="the probe's folder (default: ob-probe)")
    args = parser.parse_args()
    for name in ("width", "layers", "heads", "context", "batch", "vocab", "accumulate"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: '{getattr(args, name)}' is invalid: at least 1")
    if args.width % args.heads or not 0 < args.bucket_mb <= 1e5 or not 0 <= args.truth <= 100:
        parser.error("--width a multiple of --heads, --bucket-mb in (0, 1e5], --truth from 0 to 100")
    if not 0 <= args.time_steps <= 10000 or bool(args.time_steps) != bool(args.csv):
        parser.error("--time-steps from 1 to 10000, with --csv, both or neither")
    if not 1 <= args.tune_steps <= 10000:
        parser.error(f"--tune-steps: '{args.tune_steps}' is invalid: from 1 to 10000")
    return args


def backend_for(args):
    """The device and backend, said in one line where they are not what was asked: no GPU, the CPU; fewer GPUs than
    local ranks, gloo (NCCL takes one GPU a rank)."""
    said = int(os.environ.get("RANK", 0)) == 0
    if args.device == "cuda" and not torch.cuda.is_available():
        if said:
            print("probe_ddp: no GPU here: the ranks run on the CPU over gloo", flush=True)
        args.device = "cpu"
    local = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    if args.device == "cuda" and args.backend is None and torch.cuda.device_count() < local:
        if said:
            print(f"probe_ddp: {local} ranks share {torch.cuda.device_count()} GPU(s): NCCL takes one GPU a rank, so "
                  "gloo carries the collectives (through host memory)", flush=True)
        return "gloo"
    return args.backend or ("nccl" if args.device == "cuda" else "gloo")


def main():
    args = parse_args()
    backend = backend_for(args)
    cuda = args.device == "cuda"
    dist.init_process_group(backend)
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count()) if cuda \
        else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    module = Gpt(args.vocab, args.width, args.layers, args.heads, args.context).to(device)
    if args.fsdp2:
        from torch.distributed.fsdp import fully_shard

        blocks = list(module.blocks)
        for i, block in enumerate(blocks):
            fully_shard(block, reshard_after_forward=args.reshard_after_forward == "all" or
                        (args.reshard_after_forward == "early" and i < len(blocks) // 2))
        wrapped = fully_shard(module)
        for i, block in enumerate(blocks):  # the tuner's prefetch settings, two blocks ahead
            if args.prefetch == "forward" and i + 1 < len(blocks):
                block.set_modules_to_forward_prefetch(blocks[i + 1:i + 3])
            elif args.prefetch == "backward" and i > 0:
                block.set_modules_to_backward_prefetch(blocks[max(i - 2, 0):i][::-1])
    else:
        wrapped = nn.parallel.DistributedDataParallel(module, bucket_cap_mb=args.bucket_mb,
                                                      gradient_as_bucket_view=args.gradient_as_bucket_view)
    model = torch.compile(wrapped) if args.compile else wrapped
    optimizer = torch.optim.AdamW(wrapped.parameters(), lr=1e-4, fused=cuda)
    generator = torch.Generator(device=device).manual_seed(rank)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=not args.no_autocast)

    def batch():
        tokens = torch.randint(args.vocab, (args.batch, args.context + 1), device=device, generator=generator)
        return tokens[:, :-1], tokens[:, 1:]

    def step(net, optimizer=optimizer, as_job=True):
        """One training step of `net` (the job's, or with as_job=False the unwrapped model's for --truth)."""
        for micro in range(args.accumulate):
            x, y = batch()
            last = micro == args.accumulate - 1
            if as_job and args.fsdp2:
                wrapped.set_requires_gradient_sync(last)  # accumulation as users write it: sync on the last
            with wrapped.no_sync() if as_job and not args.fsdp2 and not last else contextlib.nullcontext():
                with autocast:
                    loss = F.cross_entropy(net(x).flatten(0, 1).float(), y.flatten()) / args.accumulate
                loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    if args.time_steps:
        time_steps(args, lambda: step(model), cuda)
        dist.barrier()
        dist.destroy_process_group()
        # torch's gloo teardown aborts now and then at interpreter exit ("terminate called without an active
        # exception", about 1 process in 20 on the CPU): the times are written, so this process leaves at once
        sys.stdout.flush()
        os._exit(0)
    probe = Probe(model, optimizer, out=args.out, allow_one_rank=args.allow_one_rank,  # probe
                  tune=args.tune, tune_steps=args.tune_steps)
    while True:
        with probe.step():  # probe
            step(model)
        if probe.done:
            break
    result = probe.finish()  # probe
    if args.truth:  # the unwrapped model (FSDP2's: a plain replica of it), compiled alike where the job is
        alone, own = module, optimizer
        if args.fsdp2:
            torch.manual_seed(0)
            alone = Gpt(args.vocab, args.width, args.layers, args.heads, args.context).to(device)
            own = torch.optim.AdamW(alone.parameters(), lr=1e-4, fused=cuda)
        alone = torch.compile(alone) if args.compile else alone
        truth(args, result, lambda: step(model), lambda: step(alone, own, as_job=False), cuda, rank)
    if args.plain_trace:  # last: a profiler with host activity moved the truth's steps taken after it (one H100)
        plain_trace(args.plain_trace, lambda: step(model))
    dist.destroy_process_group()


def plain_trace(folder, job, wait=1, warmup=1, active=3):
    """The job's steps traced as PyTorch's profiler tutorial traces them."""
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities,
                                schedule=torch.profiler.schedule(wait=wait, warmup=warmup, active=active),
                                on_trace_ready=torch.profiler.tensorboard_trace_handler(folder, use_gzip=True)) as prof:
        for _ in range(wait + warmup + active):
            job()
            prof.step()


def timed(run, cuda):
    """One step's time in ms, the slowest rank's (CUDA events around it, synchronised after it)."""
    if cuda:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        run()
        end.record()
        end.synchronize()
        ms = begin.elapsed_time(end)
    else:
        clock = time.perf_counter()
        run()
        ms = (time.perf_counter() - clock) * 1e3
    slowest = torch.tensor([ms], dtype=torch.float64, device="cuda" if cuda and dist.get_backend() == "nccl" else
                           "cpu")
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    return float(slowest.item())


def time_steps(args, job, cuda, warmup=10):
    """--time-steps: the job alone, its steps timed after a warm-up; rank 0 writes the summary CSV and metadata."""
    for _ in range(warmup):
        job()
    times = sorted(timed(job, cuda) for _ in range(args.time_steps))
    if dist.get_rank() == 0:
        import statistics

        from overlap_bench.core import ob_tool

        at = lambda q: times[min(len(times) - 1, int(q * len(times)))]  # noqa: E731
        setting = (f"reshard-{args.reshard_after_forward}-prefetch-{args.prefetch}" if args.fsdp2 else
                   f"bucket-{args.bucket_mb:g}-view-{args.gradient_as_bucket_view}")
        row = {"system": "pytorch-fsdp2" if args.fsdp2 else "pytorch-ddp", "phase": "probe-example", "mode": "overlap",
               "ranks": dist.get_world_size(), "chunks": 0, "iters": len(times),
               "time_ms_p50": statistics.median(times), "time_ms_p95": at(0.95), "time_ms_min": times[0],
               "time_ms_max": times[-1], "setting": setting}
        ob_tool.write_text_atomic(pathlib.Path(args.csv), ",".join(row) + "\n" + ",".join(map(str, row.values())) +
                                  "\n")
        meta = {"command_line": sys.argv, "backend": dist.get_backend(), "torch": torch.__version__,
                "gpus": [torch.cuda.get_device_name()] if cuda else [], "date_utc": time.strftime(
                    "%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": ob_tool.commit_id()}
        ob_tool.write_text_atomic(pathlib.Path(args.csv).with_suffix(".meta.json"), json.dumps(meta, indent=2) + "\n")


def truth(args, result, job, alone, cuda, rank, per_pass=5):
    """The job's step and its unwrapped model's, timed in turn (CUDA events around each step, synchronised after it),
    each step's slowest rank's; their medians' difference against the probe's added time. (Timed without the
    synchronisation, as the probe times, the job's steps here ran longer than the probe's own job steps in the same
    process on one H100, the compute-only ones did not: results/1xH100/probe.)"""
    times = {"job": [], "compute": []}
    for _ in range(3):
        job(), alone()
    for p in range(args.truth):
        for kind, run in (("job", job), ("compute", alone)) if p % 2 == 0 else (("compute", alone), ("job", job)):
            for _ in range(per_pass):
                times[kind].append(timed(run, cuda))
    check = truth_check(times["job"], times["compute"], result["added_ms"])
    if rank == 0:
        (pathlib.Path(args.out) / "truth.json").write_text(json.dumps(check, indent=2) + "\n")
        print(truth_sentence(check))


if __name__ == "__main__":
    main()
