#!/usr/bin/env python3
"""PyTorch DDP on exactly phase 4's model, for side-by-side comparison: L bias-free Linear(H, H) layers with ReLU
between them, batch B per GPU, MSE loss, fp32 weights, TF32 as phase 4's --tf32, bucket_cap_mb as --bucket-mb.

Launch with torchrun, one process per GPU:
  torchrun --nproc_per_node=2 -m overlap_bench.ddp.bench_ddp --configs 4096,16,512 4096,16,8192 --csv ddp.csv

Modes, timed with CUDA events after warm-up (median over iterations of the slowest rank), every one with the same
optimizer and zero_grad as the wrapped step (same work): compute (no DDP; and compute-graph, the same step replayed
from a CUDA graph: GPU-only compute time); then per wrapped run: seq (backward into gradients held in one flat
buffer per bucket, as DDP's gradient_as_bucket_view holds them, then each bucket all-reduced in place and averaged:
DDP's own bucket assignment at its cap, FSDP2's one group per layer),
comm (those all-reduces alone), overlap (DDP or FSDP2) and the derived ideal. Each configuration runs with expert
settings (system pytorch-ddp: gradient_as_bucket_view, static_graph, high-priority NCCL stream through
TORCH_NCCL_HIGH_PRIORITY=1, fused SGD, zero_grad(set_to_none=True)) unless --default (system pytorch-ddp-default).
--model runs a transformer instead (a preset or config.json as phase4_model parses it; torch_transformer.py: the same
tensors in the same backward order, batched-GEMM attention, cross-entropy on next tokens), --seq tokens x
--micro-batch sequences per GPU, optionally its first --blocks blocks; FSDP2 then shards each block.
Each --bucket-mb value is one wrapped run; a value given again is a repeat, kept as its own rows (column repeat).
--passes P times the compute-only step and every wrapped run in turn P times, as phase 4's --passes its modes.
--graph (DDP) captures each mode's step once in a CUDA graph, DDP's all-reduces included, and times its replays
(column graph 1; compute is then the replayed compute-only step): no launch gaps on either side, as phase 4's --graph;
the replay's gradients are checked too.
--fsdp runs PyTorch FSDP2 instead (system pytorch-fsdp2: fully_shard on every layer and the model, eager, without
and with resharding after the forward, or as --reshard-after-forward says; column reshard_after_forward). DDP's and
FSDP2's gradients are checked against a manual all-reduce of the same step's gradients. Writes phase 4's summary
columns; the metadata's commit is checked as the binaries' is (ob_tool.commit_id).
"""
import argparse
import json
import math
import os
import pathlib
import socket
import sys
import time

STARTED = time.monotonic()  # the process's setup time goes into the metadata (timings_s)

from overlap_bench.core import ob_csv  # noqa: E402 (after the clock starts)
from overlap_bench.core import ob_metrics  # noqa: E402
from overlap_bench.core import ob_tool  # noqa: E402
from overlap_bench.ddp.ddp_steps import (Mlp, Step, Transformer, compute_rows, fresh_model, graph_stream,  # noqa: E402
                       manual_gradients, optimizer_options, pass_share, slowest, stats, torch, dist, wrapped_run)
IMPORTED = time.monotonic()


# The summary columns that describe a configuration (beside system, phase, ranks, chunks, iters), named in the
# metadata as the binaries name theirs.
CONFIG_KEYS = ["hidden", "layers", "batch", "model", "seq", "micro_batch", "blocks", "bucket_mb", "first_bucket_mb",
               "grad_mb", "tf32", "graph", "clock", "reshard_after_forward", "repeat"]


def add_work_arguments(parser):
    """The work, as bench_ddp.py and trace_job.py take it: --configs, or --model with --seq, --micro-batch, --blocks."""
    whole, text = ob_tool.whole, ob_tool.any_text
    parser.add_argument("--configs", nargs="+", type=text, default=["4096,16,512"], help="hidden,layers,batch per rank")
    parser.add_argument("--model", type=text, help="a transformer instead of --configs: a preset (gpt2, gpt2-xl, "
                        "llama3-8b, qwen2.5-7b) or a config.json, as phase4_model reads it")
    parser.add_argument("--seq", type=whole(1, 1 << 20), default=2048, help="with --model: tokens per sequence (2048)")
    parser.add_argument("--micro-batch", type=whole(1, 1 << 16), default=1, help="with --model: sequences per GPU (1)")
    parser.add_argument("--blocks", type=whole(0, 4096), default=0, help="with --model: its first N blocks (0: all)")


def work_checks(args):
    """(option, value, whether it is allowed, what is) of add_work_arguments' sizes: none, their kinds bound them."""
    return []


def option_checks(args, probing):
    """(option, value, whether it is allowed, what is) of every option parse_args checks beyond the configurations."""
    return [("--iters", args.iters, args.iters >= 1, "at least 1"),
            ("--warmup", args.warmup, args.warmup >= 0, "at least 0"),
            ("--passes", args.passes, 1 <= args.passes <= args.iters, "from 1 to --iters"),
            ("--min-time-ms", args.min_time_ms, math.isfinite(args.min_time_ms) and 0 <= args.min_time_ms <= 3.6e6,
             "0 to 3600000"),
            ("--bucket-mb", " ".join(map(str, args.bucket_mb)),
             all(math.isfinite(mb) and mb > 0 for mb in args.bucket_mb), "numbers > 0"),
            ("--fsdp", "on", not (args.fsdp and args.default), "not with --default"),
            ("--graph", "on", not (args.graph and (args.fsdp or args.default)), "not with --fsdp or --default"),
            ("--reshard-after-forward", " ".join(map(str, args.reshard_after_forward)),
             args.fsdp or args.reshard_after_forward == [0, 1], "with --fsdp only"),
            ("--probe", getattr(args, "probe", None), not probing or not (
                args.graph or pathlib.Path(args.probe).is_symlink() or pathlib.Path(args.probe).is_file()),
             "a folder (not a link or a file), not with --graph (the probe times eager steps)"),
            ("--lr", args.lr, math.isfinite(args.lr) and args.lr >= 0, "a number >= 0"),
            ("--seed", args.seed, args.seed >= 0, "at least 0"),
            ("--order-seed", args.order_seed, args.order_seed is None or 0 <= args.order_seed < 2 ** 32,
             "0 to 2^32-1"),
            ("--emulate-nodes", args.emulate_nodes,
             1 <= args.emulate_nodes <= 1024 and int(os.environ.get("WORLD_SIZE", 1)) % args.emulate_nodes == 0,
             "1 to 1024, a divisor of the ranks (WORLD_SIZE)"),
            ("--socket-threads", args.socket_threads, 0 <= args.socket_threads <= 16, "0 to 16"),
            ("--socks-per-thread", args.socks_per_thread, 0 <= args.socks_per_thread <= 64
             and max(args.socket_threads, 1) * max(args.socks_per_thread, 1) <= 64,
             "0 to 64, x --socket-threads at most 64"),
            *[(option, value, value == 0 or args.emulate_nodes > 1, "with --emulate-nodes 2 or more")
              for option, value in (("--socket-threads", args.socket_threads),
                                    ("--socks-per-thread", args.socks_per_thread))],
            *work_checks(args)]


def parse_args(probing=False):
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    add_work_arguments(parser)
    parser.add_argument("--model-binary", type=ob_tool.executable, help="phase4_model (default: on PATH, or in "
                        "this checkout's build/)")
    parser.add_argument("--bucket-mb", type=ob_tool.number_in(1e-6, 1e6), nargs="+", default=[25.0],
                        help="DDP bucket_cap_mb; several values: one overlap row each")
    parser.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=True,
                        help="GEMMs on TF32 tensor cores, as phase 4's --tf32 (default: on)")
    parser.add_argument("--default", action="store_true", help="DDP's default settings instead of the expert ones")
    parser.add_argument("--fsdp", action="store_true", help="PyTorch FSDP2 (fully_shard per layer) instead of DDP")
    parser.add_argument("--graph", action="store_true", help="time each step's CUDA graph replayed (DDP's too)")
    parser.add_argument("--reshard-after-forward", type=ob_tool.whole(0, 1), nargs="+", choices=[0, 1], default=[0, 1],
                        help="with --fsdp: FSDP2's reshard_after_forward, one wrapped run each; one value gives one "
                             "overlap row, as a comparison's contender needs (default: 0 1)")
    parser.add_argument("--order-seed", type=ob_tool.whole(0, 2 ** 32 - 1), help="run the configurations, and each "
                        "one's caps or reshardings, in an order shuffled from this seed (recorded in the metadata's "
                        "point_order), as phase 4's --order-seed does")
    parser.add_argument("--no-isolated", action="store_true", help="time only the compute-only and the wrapped "
                        "steps (no seq, comm or ideal rows): what a comparison's contender needs")
    for option, default, kind, text in (  # the network between emulated nodes, as phase 4's
            ("--emulate-nodes", 1, ob_tool.whole(1, 1024), "split the ranks into N nodes on this host (consecutive "
             "ranks, NCCL_HOSTID per node), as phase 4's --emulate-nodes (default: 1)"),
            ("--socket-threads", 0, ob_tool.whole(0, 16), "with --emulate-nodes: NCCL_SOCKET_NTHREADS, and with "
             "--socks-per-thread a faster network, as phase 4's (default: 0, NCCL's own)"),
            ("--socks-per-thread", 0, ob_tool.whole(0, 64), "with --emulate-nodes: NCCL_NSOCKS_PERTHREAD (threads x "
             "sockets at most 64; default: 0, NCCL's own)")):
        parser.add_argument(option, type=kind, default=default, help=text)
    parser.add_argument("--iters", type=ob_tool.whole(1, 1000000), default=20, help="timed iterations per mode (20)")
    parser.add_argument("--warmup", type=ob_tool.whole(0, 100000), default=5, help="untimed iterations before them (5)")
    parser.add_argument("--min-time-ms", type=ob_tool.number_in(0, 3.6e6), default=0.0, help="timed iterations "
                        "beyond --iters until they fill this many ms, by the warm-up's step (at most 1000; default: 0)")
    parser.add_argument("--passes", type=ob_tool.whole(1, 1000000), default=1, help="time the compute-only and "
                        "wrapped steps in turn this many times, each pass its share of --iters and --min-time-ms, as "
                        "phase 4's (default: 1)")
    parser.add_argument("--lr", type=ob_tool.number_in(0, 1e6), default=0.01, help="SGD learning rate (default: 0.01)")
    parser.add_argument("--seed", type=ob_tool.whole(0, 2 ** 63 - 1), default=1234, help="seed of weights, data (1234)")
    parser.add_argument("--csv", required=True, type=ob_tool.output_file(".csv"), help="summary CSV to write (rank 0)")
    if probing:
        parser.add_argument("--probe", type=ob_tool.output_tree, metavar="DIR", required=True, help="then each "
                            "wrapped run under the probe (overlap_bench.probe), held against these runs' own times: "
                            "DIR/<config>-<ddp|fsdp><setting>/ with truth.json")
    args = parser.parse_args()
    check_configs(parser, args.configs)
    checks = option_checks(args, probing)
    if not args.model:
        checks += [(option, value, value == default, "with --model only")
                   for option, value, default in (("--seq", args.seq, 2048), ("--micro-batch", args.micro_batch, 1),
                                                  ("--blocks", args.blocks, 0))]
    for option, value, ok, allowed in checks:
        if not ok:
            parser.error(f"{option}: '{value}' is invalid: {allowed}")
    check_csv(parser, args.csv)
    try:
        csv = pathlib.Path(args.csv)
        inputs = [("--model", pathlib.Path(args.model))] if args.model else []
        ob_tool.require_outputs([("--csv", csv), ("--csv (its metadata)", ob_csv.meta_path(csv))], inputs)
        if args.model:  # one parser of configs, phase4_model's: its errors (a missing key) are ours, before any work
            args.shape = ob_tool.model_blocks(args.model, args.blocks, args.model_binary)
    except ob_tool.UsageError as error:
        parser.error(str(error))
    return args


def check_csv(parser, text):
    """--csv: a .csv file path in a writable directory (a usage error otherwise)."""
    csv = pathlib.Path(text)
    if csv.suffix != ".csv" or csv.is_dir():
        parser.error(f"--csv: '{text}' is invalid: a .csv file path")
    if not csv.resolve().parent.is_dir() or not os.access(csv.resolve().parent, os.W_OK):
        parser.error(f"--csv: '{text}' is invalid: its directory must exist and be writable")


def check_configs(parser, configs):
    """--configs' values: hidden,layers,batch as positive whole numbers (a usage error naming the first that is not)."""
    for text in configs:
        parts = text.split(",")
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
            parser.error(f"--configs: '{text}' is invalid: hidden,layers,batch as positive whole numbers")


def settings(args, work=None):
    """(kind, setting) of each wrapped run, repeats kept in order: DDP's bucket caps, or FSDP2's reshardings; with
    --order-seed shuffled by a generator of that seed and the configuration (`work`'s label)."""
    runs = [("fsdp", reshard) for reshard in args.reshard_after_forward] if args.fsdp else \
        [("ddp", mb) for mb in args.bucket_mb]
    return shuffled(runs, args.order_seed, work.label if work else "")


def shuffled(items, seed, salt=""):
    """`items` in an order shuffled from `seed` (and `salt`), or as given without a seed."""
    if seed is None:
        return list(items)
    import random

    order = list(items)
    random.Random(f"{seed}/{salt}").shuffle(order)
    return order


def run_config(args, work, rank, world, after_runs=None):
    """Times one configuration (`work`: an Mlp or a Transformer): the compute-only steps, then every wrapped run, in
    turn --passes times, each pass timing its share of --iters and --min-time-ms after its own warm-up on a freshly
    wrapped model (ddp_steps.pass_share), a row's iterations those of every pass. Returns (compute rows {mode:
    stats}, per wrapped run [(kind, setting, {mode: stats}, buckets)], the largest relative gradient error against a
    manual all-reduce)."""
    model = fresh_model(args, work)  # identical initial weights on every rank
    generator = torch.Generator(device="cuda").manual_seed(args.seed * 1000003 + 17 * (rank + 1))
    step = Step(work, *work.data(generator), set_to_none=not args.default)  # each rank's data differs
    optimizer = torch.optim.SGD(list(model.parameters()), **optimizer_options(args))
    manual = manual_gradients(args, work, step, world)  # checked first, before any timed wrapped step
    rows, runs, worst = {}, {}, 0.0
    for k in range(args.passes):
        share = pass_share(args, args.passes, k)
        for mode, times in compute_rows(share, rank, model, optimizer, step).items():
            rows.setdefault(mode, []).extend(times)
        for index, (kind, setting) in enumerate(settings(args, work)):
            (_, _, modes, buckets), error = wrapped_run(share, work, model, optimizer, step, manual, world, kind,
                                                        setting)
            joined = runs.setdefault(index, (kind, setting, {}, buckets))[2]
            for mode, times in modes.items():
                joined.setdefault(mode, []).extend(times)
            worst = max(worst, error)
            # the next run builds its own wrapped model (its buckets replace these gradients)

    def of_slowest(times_by_mode):
        return {mode: slowest(times) for mode, times in times_by_mode.items()}

    rows, runs = of_slowest(rows), [(kind, setting, of_slowest(modes), buckets)
                                    for kind, setting, modes, buckets in runs.values()]
    if after_runs:  # ob-probe-suite: each wrapped run under the probe, held against these times
        after_runs(args, work, rank, world, step, rows["compute"], runs)
    return {mode: stats(times) for mode, times in rows.items()}, \
        [(kind, setting, {mode: stats(times) for mode, times in modes.items()}, buckets)
         for kind, setting, modes, buckets in runs], worst


def summary_rows(args, system, world, work, compute, runs, worst):
    """Phase 4's summary rows of one configuration (`work.keys` name it, `work.grad_bytes` its gradient): compute
    (and compute-graph) once; then per wrapped run, repeats kept apart by `repeat`, its own seq, comm, overlap (with
    the metrics of METRICS.md against its own seq and comm, shared with the tests) and ideal."""
    grad_bytes = work.grad_bytes
    base = {"system": system, "phase": "phase4", "ranks": world, "chunks": 0, "iters": args.iters,
            "model": "", "seq": math.nan, "micro_batch": math.nan, "blocks": math.nan, **work.keys,
            "bucket_mb": math.nan,
            "first_bucket_mb": math.nan, "grad_mb": grad_bytes / (1 << 20), "tf32": int(args.tf32),
            "graph": int(args.graph),
            "clock": "cuda_event", "reshard_after_forward": math.nan, "repeat": 0, "ddp_grad_rel_error": worst}
    lines = [dict(base, mode=mode, **values) for mode, values in compute.items()]
    t_comp = compute["compute"]["time_ms_p50"]
    seen = {}
    for kind, setting, modes, buckets in runs:
        knob = {"bucket_mb": setting, "first_bucket_mb": 1.0} if kind == "ddp" else {"reshard_after_forward": setting}
        repeat = seen[(kind, setting)] = seen.get((kind, setting), -1) + 1
        row = dict(base, **knob, repeat=repeat, buckets=buckets)
        if "seq" not in modes:  # --no-isolated: the wrapped step alone, beside the configuration's compute-only
            lines.append(dict(row, mode="overlap", **modes["overlap"]))
            continue
        t_seq, t_comm = modes["seq"]["time_ms_p50"], modes["comm"]["time_ms_p50"]
        algbw = ob_metrics.algbw_GBps(grad_bytes, t_comm)
        lines += [dict(row, mode="seq", **modes["seq"]),
                  dict(row, mode="comm", **modes["comm"], algbw_GBps=algbw,
                       busbw_GBps=ob_metrics.allreduce_busbw_GBps(algbw, world)),
                  dict(row, mode="overlap", **modes["overlap"],
                       **ob_metrics.overlap_metrics(t_seq, t_comp, t_comm, modes["overlap"]["time_ms_p50"])),
                  dict(row, mode="ideal", **{k: ob_metrics.ideal_ms(t_comp, t_comm) for k in modes["seq"]})]
    return lines


def main(after_runs=None):
    """bench_ddp; ob-probe-suite passes `after_runs` (overlap_bench.probe.suite) and takes --probe."""
    args = parse_args(probing=after_runs is not None)
    if torch is None:
        print("bench_ddp: PyTorch is not installed (python3 -m pip install torch)", file=sys.stderr)
        return 77
    if not args.default:
        os.environ.setdefault("TORCH_NCCL_HIGH_PRIORITY", "1")  # read when the process group is created
    if not torch.cuda.is_available():
        print("bench_ddp: no CUDA device available", file=sys.stderr)
        return 77
    timings = {"import": round(IMPORTED - STARTED, 2)}
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.emulate_nodes > 1:  # read by NCCL when the process group is created: its nodes joined by its network
        world = int(os.environ.get("WORLD_SIZE", 1))
        node = int(os.environ.get("RANK", 0)) // (world // args.emulate_nodes)
        os.environ["NCCL_HOSTID"] = f"overlap-bench-node-{node}"
        for name, value in (("NCCL_SOCKET_NTHREADS", args.socket_threads),
                            ("NCCL_NSOCKS_PERTHREAD", args.socks_per_thread)):
            if value:
                os.environ[name] = str(value)
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    rank, world = dist.get_rank(), dist.get_world_size()
    timings["process_group"] = round(time.monotonic() - STARTED, 2)
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    system = "pytorch-fsdp2" if args.fsdp else "pytorch-ddp-default" if args.default else "pytorch-ddp"
    lines, failures = [], []
    order = []
    for work in [Transformer(args)] if args.model else shuffled([Mlp(text) for text in args.configs], args.order_seed):
        order += [f"{work.label}: {kind} {setting}" for kind, setting in settings(args, work)]
        if rank == 0:
            print(f"bench_ddp: {system} {work.label}", file=sys.stderr, flush=True)
        begun = time.monotonic()
        with graph_stream(args.graph):
            results, runs, worst = run_config(args, work, rank, world, after_runs)
        timings[f"config {work.label}"] = round(time.monotonic() - begun, 2)
        if not worst <= 1e-5:  # NaN fails too
            failures.append(f"{work.label}: {system} gradients differ from a manual all-reduce by {worst:.3g} "
                            "(relative)")
        lines += summary_rows(args, system, world, work, results, runs, worst)
    if rank == 0:
        import pandas as pd  # only rank 0 writes

        columns = ["system", "phase", "mode", "ranks", "chunks", "iters", "time_ms_p50", "time_ms_p95",
                   "time_ms_min", "time_ms_max", "time_ms_mean", "time_ms_stddev", "time_ms_p50_ci_rel", "unstable"]
        frame = pd.DataFrame(lines)
        frame = frame[columns + [c for c in frame.columns if c not in columns]]
        frame["unstable"] = frame["unstable"].fillna(0).astype(int)  # a derived row has no iterations: 0, as phase 4's
        path = pathlib.Path(args.csv)
        ob_tool.write_text_atomic(path, frame.to_csv(index=False))
        meta = {"suite": "overlap-bench", "phase": "bench_ddp", "system": system, "host": socket.gethostname(),
                "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command_line": sys.argv,
                "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                "gpus": [{"gpu_name": torch.cuda.get_device_name(0)}], "ranks": world, "clock": "cuda_event",
                "commit": ob_tool.commit_id(),
                # seconds since the process started: torch imported, the process group up; each configuration's run
                "timings_s": timings, "order_seed": args.order_seed, "point_order": order, "passes": args.passes,
                "emulated_nodes": args.emulate_nodes,
                "config_columns": ["system", "phase", "ranks", "chunks", "iters", *CONFIG_KEYS]}
        ob_tool.write_text_atomic(path.with_name(path.stem + ".meta.json"), json.dumps(meta, indent=2) + "\n")
        summary = frame[frame["mode"].isin(["compute", "seq", "overlap", "ideal"])]
        print(summary.fillna({"model": ""}).pivot_table(index=["model", "hidden", "layers", "batch"], columns="mode",
                                                        values="time_ms_p50", aggfunc="min").round(3))
        # (overlap: the best bucket cap or arrangement)
        for failure in failures:
            print(f"bench_ddp: check failed: {failure}", file=sys.stderr)
    dist.destroy_process_group()
    return 1 if failures else 0


def cli():
    """The console command (pyproject.toml) and `python3 bench_ddp.py`: usage errors exit 2, I/O failures 3, never a
    traceback (ob_tool.main_guard)."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
