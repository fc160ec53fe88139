#!/usr/bin/env python3
"""A stand-in for the headline's processes in CPU tests: writes the summary rows phase 4 (--kind p4: per
configuration and strategy compute, comm, overlap and bound rows at its caps, and the planner's plan), bench_ddp.py
(--kind ddp: a compute row per configuration, an overlap row per cap) or FSDP2 (--kind fsdp2) would, with the same
columns. Times are a fixed function of configuration, strategy and cap, moved by up to 1 % by the run's name."""
import argparse
import random

parser = argparse.ArgumentParser()
parser.add_argument("--kind", choices=["p4", "ddp", "fsdp2"], required=True)
parser.add_argument("--configs", required=True)
parser.add_argument("--syncs", default="nccl,ce")
parser.add_argument("--caps", default="25,64")
parser.add_argument("--csv", required=True)
args = parser.parse_args()
jitter = random.Random(args.csv.rsplit("/", 1)[-1])
COLUMNS = ["system", "phase", "mode", "ranks", "chunks", "iters", "time_ms_p50", "time_ms_p95", "time_ms_min",
           "time_ms_max", "time_ms_p50_ci_rel", "hidden", "layers", "batch", "sync", "plan", "bucket_mb", "buckets",
           "bound_kind"]
SPEED = {"nccl": 1.0, "ce": 0.8, "nccl-sym": 0.98, "sharded": 0.9, "sharded-ce": 0.7}


def row(mode, ms, config, **extra):
    h, l, b = config.split("x")
    ms *= 1 + 0.01 * (2 * jitter.random() - 1)
    values = {"system": "fake", "phase": "phase4", "mode": mode, "ranks": 2, "chunks": 0, "iters": 5,
              "time_ms_p50": ms, "time_ms_p95": ms, "time_ms_min": ms, "time_ms_max": ms, "time_ms_p50_ci_rel": 0.01,
              "hidden": h, "layers": l, "batch": b, **extra}
    return ",".join(str(values.get(c, "")) for c in COLUMNS)


lines = [",".join(COLUMNS)]
for index, config in enumerate(args.configs.split(",")):
    base = 10.0 * (index + 1)
    if args.kind == "p4":
        for sync in args.syncs.split(","):
            step = base * SPEED.get(sync, 1.0)
            point = {"sync": sync, "plan": "caps", "bucket_mb": 25, "buckets": 8, "bound_kind": "bound"}
            lines += [row("compute", base * 0.6, config, **point), row("comm", base * 0.5, config, **point),
                      row("overlap", step, config, **point), row("bound", step * 0.9, config, **point)]
        lines += [row("compute", base * 0.6, config, sync="ce", plan="auto", buckets=5),
                  row("overlap", base * 0.82, config, sync="ce", plan="auto", buckets=5)]
    else:
        lines.append(row("compute", base * 0.7, config))
        for cap in (args.caps.split(",") if args.kind == "ddp" else [""]):
            step = base * (1.1 if args.kind == "ddp" and cap == "25" else 1.05 if args.kind == "ddp" else 1.2)
            lines.append(row("overlap", step, config, bucket_mb=cap))
with open(args.csv, "w") as out:
    out.write("\n".join(lines) + "\n")
