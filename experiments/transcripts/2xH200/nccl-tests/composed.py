#!/usr/bin/env python3
"""ce's reference made of nccl-tests' copy-engine collectives the way ce runs them: an out-of-place all-to-all
(gradient into the received slices) and an in-place all-gather (on the reduced buffer). Composed as one all-reduce of
S bytes on 2 ranks: bus bandwidth = S / (t_all-to-all + t_all-gather) (busbw = algbw for an all-reduce on 2 ranks).
Beside it phase 4's comm-only `ce` at the same bucket sizes: the single-process nccl-tests runs beside phase 4 before
586fd93, and the MPI runs (mpi/) beside phase 4 at 586fd93. Writes composed.csv (METRICS.md, "Check tables"), and busbw.csv: each nccl-tests run's in-place bus bandwidth
per size beside phase 4's comm-only runs of that size, and phase 4 over nccl-tests' mode of the same collective.

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


# (set, name, nccl-tests log or phase 4 summary): the bus bandwidth tables of the README.
BUSBW = [("single-process", "nccl-tests all-reduce, ring", "allreduce-ring.txt"),
         ("single-process", "phase 4 nccl", "../strategies/phase4-sync-comm-nccl.csv"),
         ("single-process", "nccl-tests all-reduce, symmetric", "allreduce-sym.txt"),
         ("single-process", "phase 4 nccl-sym", "../strategies/phase4-sync-comm-nccl-sym.csv"),
         ("single-process", "nccl-tests all-to-all, copy engines", "alltoall-ce.txt"),
         ("single-process", "nccl-tests all-gather, copy engines", "allgather-ce.txt"),
         ("mpi", "nccl-tests all-reduce, ring, -n 20", "mpi/mpi-allreduce-ring.txt"),
         ("mpi", "nccl-tests all-reduce, ring, -n 200", "mpi/mpi-allreduce-ring-n200.txt"),
         ("mpi", "phase 4 nccl", "../strategies/586fd93/phase4-sync-comm-nccl.csv"),
         ("mpi", "nccl-tests all-reduce, symmetric, -n 20", "mpi/mpi-allreduce-sym.txt"),
         ("mpi", "nccl-tests all-reduce, symmetric, -n 200", "mpi/mpi-allreduce-sym-n200.txt"),
         ("mpi", "phase 4 nccl-sym", "../strategies/586fd93/phase4-sync-comm-nccl-sym.csv")]
# (set, phase 4's row, nccl-tests' rows it is set against)
RATIOS = [("single-process", "phase 4 nccl-sym", ["nccl-tests all-reduce, symmetric"]),
          ("mpi", "phase 4 nccl-sym", ["nccl-tests all-reduce, symmetric, -n 20", "nccl-tests all-reduce, symmetric, -n 200"])]


def busbw(path):
    """size in MiB -> in-place bus bandwidth (GB/s), from a nccl-tests log or a phase 4 comm-only summary."""
    if path.endswith(".csv"):
        frame = pd.read_csv(path)
        return {int(r.bucket_mb): round(r.busbw_GBps, 1) for r in frame[frame["mode"] == "comm"].itertuples()}
    return {size >> 20: bandwidth for size, bandwidth in times_us(path, 11).items()}


def busbw_rows():
    rows, figures = [], {}
    for name, source, path in BUSBW:
        figures[(name, source)] = busbw(path)
        rows += [{"set": name, "source": source, "size_mb": mb, "value": v} for mb, v in figures[(name, source)].items()
                 if mb in [s >> 20 for s in SIZES]]
    for name, ours, theirs in RATIOS:
        for reference in theirs:
            rows += [{"set": name, "source": f"{ours} / {reference}", "size_mb": mb,
                      "value": round(figures[(name, ours)][mb] / v, 2)} for mb, v in figures[(name, reference)].items()
                     if mb in figures[(name, ours)]]
    return rows


def main():
    rows = []
    for name, prefix, phase4_csv in SETS:
        rows += composed(name, prefix, phase4_csv)
    pd.DataFrame(rows).to_csv("composed.csv", index=False)
    pd.DataFrame(busbw_rows()).to_csv("busbw.csv", index=False)


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
