#!/usr/bin/env python3
"""The planner on slower links (issue 36), from files of this lease: the calibration of 4096,16,512 made on NVLink
(planner-4096-16-512.*, `--calibrate --plan-syncs nccl,nccl-sym,ce`), each transport's comm-only runs
(../transports/comm-<t>.csv: the same 256 MiB gradient in 256, 17, 5 and 2 buckets) fitted as
t = buckets * alpha + bytes / beta, and phase4_predict given only that fit (two "nodes" of one GPU joined by the
link) for the plan the transports ran (--sync nccl, 25 MiB buckets). Beside each prediction the step measured on
that transport (../transports/step-nccl-<t>.csv) and the best plan the planner would choose there.
Writes slow-links.csv. Usage: python3 make.py PHASE4_PREDICT (from this folder)."""
import io
import pathlib
import subprocess
import sys

import pandas as pd

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3] / "scripts"))
import check_prediction  # noqa: E402 (the suite's link fit, as check_prediction.py --links-from fits)
CALIBRATION = HERE / "planner-4096-16-512.calibration.json"


def fit(transport):
    """alpha (ms per bucket) and beta (GB/s) of the comm-only step over bucket counts."""
    return check_prediction.link_fit_of(HERE.parent / "transports" / f"comm-{transport}.csv")[1:]


def predict(predictor, link, *plan):
    args = [predictor, "--calibration", str(CALIBRATION), "--ranks", "2"]
    if link:
        args += ["--gpus-per-node", "1", "--links", link]
    out = subprocess.run(args + list(plan), capture_output=True, text=True, check=True).stdout
    return pd.read_csv(io.StringIO(out)).iloc[0]


def main(predictor):
    version = subprocess.run([predictor, "--version"], capture_output=True, text=True, check=True).stdout
    commit = version.split(" commit ", 1)[1].split(",", 1)[0]  # the predictor's own, as its --version says
    rows = []
    for transport in ("nvlink", "shm", "socket"):
        alpha, beta = fit(transport)
        link = "" if transport == "nvlink" else f"{transport}:{beta:.4g}:{alpha * 1e3:.4g}"
        same = predict(predictor, link, "--sync", "nccl", "--bucket-mb", "25")
        best = predict(predictor, link)
        measured = pd.read_csv(HERE.parent / "transports" / f"step-nccl-{transport}.csv").set_index("mode")
        step = measured.loc["overlap", "time_ms_p50"]
        rows.append({"transport": transport, "alpha_us": round(alpha * 1e3, 1), "beta_GBps": round(beta, 2),
                     "predicted_ms": round(same.predicted_ms, 3), "measured_ms": round(step, 3),
                     "error": round(step / same.predicted_ms - 1, 3),  # measured / predicted - 1, as check_prediction
                     "measured_seq_ms": round(measured.loc["seq", "time_ms_p50"], 3),
                     "best_plan": f"{best.sync}, {int(best.buckets)} buckets", "best_predicted_ms": round(best.predicted_ms, 3),
                     "predictor_commit": commit})
    pd.DataFrame(rows).to_csv(HERE / "slow-links.csv", index=False)


if __name__ == "__main__":
    main(sys.argv[1])
