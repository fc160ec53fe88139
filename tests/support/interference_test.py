#!/usr/bin/env python3
"""Phase 4 on 2 ranks (GPUs): --mode interference over every all-reduce strategy writes a row per strategy and
message size with both sides of the contention (the GEMM alone and beside the collective, the collective alone and
beside GEMMs), sizes as the strategy ran them; a training sweep keeps every point's events in its timeline, each
point a process group of its own in the Chrome trace. Exit 77 without GPUs.

  interference_test.py PHASE4 MPIEXEC [MPIEXEC_FLAGS...]
"""
import json
import pathlib
import subprocess
import sys
import tempfile

import pandas as pd

MODEL = ["--hidden", "512", "--layers", "6", "--batch", "256"]


def main():
    phase4, mpirun = sys.argv[1], sys.argv[2:]
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)

        def run(*args):
            command = [*mpirun[:1], "-np", "2", *mpirun[1:], phase4, *MODEL, *map(str, args)]
            result = subprocess.run(command, capture_output=True, text=True, timeout=600)
            print(" ".join(command[-14:]), "->", result.returncode)
            print(result.stdout[-3000:] + result.stderr[-2000:])
            return result

        csv = work / "map.csv"
        first = run("--mode", "interference", "--sweep", "sync=nccl,nccl-sym,ce", "--interference-mb", "0.5,2",
                    "--interference-window-ms", "2", "--iters", "3", "--csv", csv)
        if first.returncode == 77:
            return 77
        assert first.returncode == 0, first.returncode
        rows = pd.read_csv(csv)
        assert (rows["mode"] == "interference").all(), set(rows["mode"])
        assert list(rows["sync"]) == ["nccl", "nccl", "nccl-sym", "nccl-sym", "ce", "ce"], list(rows["sync"])
        for sync, part in rows.groupby("sync"):
            sizes = list(part["msg_mb"])
            # ce rounds a bucket to whole slices per rank: within one row of the model of the asked size
            assert abs(sizes[0] - 0.5) < 0.01 and abs(sizes[1] - 2) < 0.01, (sync, sizes)
        for column in ("gemm_ms", "gemm_overlap_ms", "comm_ms", "comm_overlap_ms", "busbw_GBps", "time_ms_p50"):
            assert (rows[column] > 0).all(), (column, rows[column])
        assert (rows["gemm_overlap_ms"] == rows["time_ms_p50"]).all()
        # the CSV keeps 9 significant digits: the derived columns agree with their inputs to that precision
        slowdown = rows["gemm_overlap_ms"] / rows["gemm_ms"] - 1
        assert ((rows["compute_slowdown"] - slowdown).abs() < 1e-6).all(), (rows["compute_slowdown"], slowdown)
        stretch = rows["comm_overlap_ms"] / rows["comm_ms"]
        assert ((rows["comm_stretch"] - stretch).abs() < 1e-6 * stretch).all(), (rows["comm_stretch"], stretch)
        assert rows["compute_slowdown"].between(-0.3, 10).all() and rows["comm_stretch"].between(0.5, 50).all()
        meta = json.loads((work / "map.meta.json").read_text())
        assert "msg_mb" in meta["config_columns"], meta["config_columns"]

        sweep = work / "sweep.csv"
        second = run("--sweep", "chunks=2,4", "--iters", "2", "--warmup", "1", "--csv", sweep)
        assert second.returncode == 0
        timeline = pd.read_csv(work / "sweep.timeline.csv")
        assert list(dict.fromkeys(timeline.sort_values("start_us")["point"])) == ["chunks=2", "chunks=4"]
        trace = json.loads((work / "sweep.timeline.trace.json").read_text())
        processes = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
        assert {f"chunks={c} · rank {r}" for c in (2, 4) for r in (0, 1)} <= processes, processes
    print("PASS: interference map of 3 strategies x 2 sizes; sweep timeline of 2 points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
