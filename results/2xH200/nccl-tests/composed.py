#!/usr/bin/env python3
"""ce's reference made of nccl-tests' copy-engine collectives the way ce runs them: an out-of-place all-to-all
(gradient into the received slices) and an in-place all-gather (on the reduced buffer). Composed as one all-reduce of
S bytes on 2 ranks: bus bandwidth = S / (t_all-to-all + t_all-gather) (busbw = algbw for an all-reduce on 2 ranks).
Beside it phase 4's comm-only `ce` at the same bucket sizes: the single-process nccl-tests runs beside phase 4 before
586fd93, and the MPI runs (mpi/) beside phase 4 at 586fd93. Writes composed.csv (METRICS.md, "Check tables").

Usage: python3 composed.py   (from this folder)"""
import pandas as pd

SIZES = [1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30]


def times_us(path, column):
    """nccl-tests' time per size: column 5 out-of-place, 9 in-place (fields after size, count, type, redop, root)."""
    times = {}
    for line in open(path):
        fields = line.split()
        if fields and fields[0].isdigit() and int(fields[0]) in SIZES:
            times[int(fields[0])] = float(fields[column])
    return times


SETS = [("single-process", "", "../strategies/phase4-sync-comm-ce.csv"),
        ("mpi", "mpi/mpi-", "../strategies/586fd93/phase4-sync-comm-ce.csv")]


def main():
    rows = []
    for name, prefix, phase4_csv in SETS:
        rows += composed(name, prefix, phase4_csv)
    pd.DataFrame(rows).to_csv("composed.csv", index=False)


def composed(name, prefix, phase4_csv):
    alltoall = times_us(f"{prefix}alltoall-ce.txt", 5)      # out-of-place, as ce's all-to-all
    allgather = times_us(f"{prefix}allgather-ce.txt", 9)    # in-place, as ce's all-gather
    ce = pd.read_csv(phase4_csv).set_index("bucket_mb")
    rows = []
    for size in SIZES:
        composed = size / (alltoall[size] + allgather[size]) / 1e3  # GB/s
        phase4 = ce.loc[size >> 20, "busbw_GBps"]
        rows.append({"set": name, "size_mb": size >> 20, "alltoall_oop_us": alltoall[size], "allgather_ip_us": allgather[size],
                     "composed_busbw_GBps": round(composed, 1), "ce_busbw_GBps": round(phase4, 1),
                     "ce_over_composed": round(phase4 / composed, 2)})
    return rows


if __name__ == "__main__":
    main()
