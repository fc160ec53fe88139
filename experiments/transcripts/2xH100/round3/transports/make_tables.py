#!/usr/bin/env python3
"""The tables of this folder from its files: transports.csv (phase 4's comm-only bus bandwidth per bucket size against
nccl-tests' all_reduce_perf at the same message size under the same NCCL variables) and steps.csv (phase 4's step
on 4096,16,512 with --sync nccl per transport, and the path NCCL's log names)."""
import json
import pathlib

import pandas as pd

HERE = pathlib.Path(__file__).resolve().parent
TRANSPORTS = ["nvlink", "shm", "socket"]


def nccl_tests(path):
    """size in bytes -> out-of-place bus bandwidth (GB/s) from an all_reduce_perf log."""
    table = {}
    for line in path.read_text().splitlines():
        words = line.split()
        if len(words) == 13 and words[0].isdigit():
            table[int(words[0])] = float(words[7])
    return table


rows, steps = [], []
for transport in TRANSPORTS:
    reference = nccl_tests(HERE / f"nccl-tests-{transport}.txt")
    comm = pd.read_csv(HERE / f"comm-{transport}.csv")
    for _, row in comm[comm["mode"] == "comm"].iterrows():
        size = int(row.bucket_mb * (1 << 20))
        theirs = reference.get(size, float("nan"))
        rows.append({"transport": transport, "bucket_mb": row.bucket_mb, "buckets": row.buckets,
                     "phase4_busbw_GBps": round(row.busbw_GBps, 2), "nccl_tests_busbw_GBps": theirs,
                     "ratio": round(row.busbw_GBps / theirs, 3), "wrong": row.wrong})
    step = pd.read_csv(HERE / f"step-nccl-{transport}.csv").set_index("mode")
    path = json.loads((HERE / f"step-nccl-{transport}.meta.json").read_text()).get("nccl_path", {})
    overlap = step.loc["overlap"]
    steps.append({"transport": transport, "compute_ms": round(step.loc["compute"].time_ms_p50, 3),
                  "comm_ms": round(step.loc["comm"].time_ms_p50, 3), "seq_ms": round(step.loc["seq"].time_ms_p50, 3),
                  "overlap_ms": round(overlap.time_ms_p50, 3), "bound_ms": round(step.loc["bound"].time_ms_p50, 3),
                  "bound_kind": step.loc["bound"].bound_kind, "overlap_pct": round(overlap.overlap_pct, 1),
                  "speedup": round(overlap.speedup, 3), "nccl_transports": " ".join(path.get("transports", [])),
                  "coll_channels": path.get("coll_channels")})
pd.DataFrame(rows).to_csv(HERE / "transports.csv", index=False)
pd.DataFrame(steps).to_csv(HERE / "steps.csv", index=False)
