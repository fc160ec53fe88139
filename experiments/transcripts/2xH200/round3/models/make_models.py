#!/usr/bin/env python3
"""This folder's derived files, from its measured runs (make.sh runs it): per model folder, steps.csv and steps.png
(each backward step's measured compute, its gradient, the buckets phase 4 ran and DDP's at the predicted cap), and
models.csv, one row per model: the comparison's ratios with their intervals and verdicts, the planner's DDP cap and
predicted steps against the measured ones, how much communication phase 4 hid and how much compute slowed beside it;
and per model predict-scaling.csv, the planner's strategy, plan and DDP cap from 2 to 1024 GPUs.

Usage: python3 make_models.py PHASE4_PREDICT"""
import json
import pathlib
import subprocess
import sys
import tempfile

import pandas as pd

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[3]
sys.path.insert(0, str(REPO / "scripts"))

import ob_csv  # noqa: E402
import predict  # noqa: E402

MODELS = ["gpt2-xl-2048", "gpt2-xl-4096", "llama3-8b-2048", "llama3-8b-4096", "gpt2-xl-2048-shm",
          "llama3-8b-2048-shm", "gpt2-xl-2048-socket"]
# predicted to 1024 GPUs: each model's newest NVLink calibration at seq 2048 (a node's own link is NVLink)
SCALED = ["gpt2-xl-2048", "llama3-8b-2048"]


def measured_steps(folder):
    """Median over iterations and the slower rank of each backward step of round 1's phase 4 compute-only run."""
    events = pd.read_csv(folder / "compare" / "runs" / "r0-p4.compute-backward.csv.gz")
    events["ms"] = (events["end_us"] - events["start_us"]) / 1000
    per_rank = events.groupby(["chunk", "rank"])["ms"].median().groupby("chunk").max()
    layers = int(events["chunk"].max())
    return [per_rank[layers - s] for s in range(layers)]  # step s is chunk L - s


def steps_table(folder, predictor):
    """phase4_predict's steps of the plan phase 4 ran (the best on the calibrated ranks), their compute measured."""
    with tempfile.TemporaryDirectory() as tmp:
        steps_csv = pathlib.Path(tmp) / "steps.csv"
        subprocess.run([predictor, "--calibration", str(folder / "calibrate.calibration.json"), "--ranks", "2",
                        "--gpus-per-node", "2", "--csv", str(pathlib.Path(tmp) / "p.csv"), "--layers-csv",
                        str(steps_csv)], check=True, capture_output=True, text=True)
        steps = pd.read_csv(steps_csv)
    steps["backward_ms"] = measured_steps(folder)
    return steps


def scaling(folder, predictor):
    """The planner's prediction from this model's measured calibration, 2 to 1024 GPUs, 8 per node joined by ib400 or
    eth100: predict-scaling.csv (measured compute, so the model's calibrated blocks, not extrapolated)."""
    subprocess.run([predictor, "--calibration", str(folder / "calibrate.calibration.json"), "--csv",
                    str(folder / "predict-scaling.csv")], check=True, capture_output=True, text=True)


def row(folder):
    cmp = pd.read_csv(folder / "compare" / "compare.csv")
    compute = pd.read_csv(folder / "compare" / "compare.compute.csv")
    meta = json.loads((folder / "compare" / "compare.meta.json").read_text())
    p4_runs = [ob_csv.load_summary(path) for path in sorted((folder / "compare" / "runs").glob("r*-p4.csv"))]
    overlap = pd.concat([frame[frame["mode"] == "overlap"] for frame in p4_runs])
    predicted = pd.read_csv(folder / "predict-2.csv").iloc[0]

    def pick(table, contender, baseline):
        return table[(table["contender"] == contender) & (table["baseline"] == baseline)].iloc[0]

    best = pick(cmp, "p4", "ddp25,ddpcap")
    default = pick(cmp, "p4", "ddp25")
    cap = pick(cmp, "ddpcap", "ddp25")
    fsdp = pick(cmp, "fsdp2", "ddp25,ddpcap")
    same_work = pick(compute, "p4", "ddp25")
    ddpcap_run = pick(cmp, "ddpcap", "ddp25")
    ddpcap_ms = ddpcap_run["median_ms"]
    first = overlap.iloc[0]
    return {
        "model": first["model"], "blocks": int(first["blocks"]), "seq": int(first["seq"]),
        "transport": first["transport"],
        "tensors": int(first["layers"]), "rounds": int(best["rounds"]),
        "p4_sync": first["sync"], "p4_buckets": int(first["buckets"]), "p4_median_ms": best["median_ms"],
        "p4_vs_ddp_best": best["ratio"], "p4_vs_ddp_best_lo": best["ratio_ci_lo"],
        "p4_vs_ddp_best_hi": best["ratio_ci_hi"], "p4_vs_ddp_best_verdict": best["verdict"],
        "ddp_best_pick": best["baseline_pick"],
        "p4_vs_ddp25": default["ratio"], "p4_vs_ddp25_verdict": default["verdict"],
        "fsdp2_vs_ddp_best": fsdp["ratio"], "fsdp2_vs_ddp_best_lo": fsdp["ratio_ci_lo"],
        "fsdp2_vs_ddp_best_hi": fsdp["ratio_ci_hi"], "fsdp2_unstable": int(fsdp["unstable"]),
        "ddp_predicted_cap_mb": predicted["ddp_bucket_cap_mb"], "ddpcap_vs_ddp25": cap["ratio"],
        "ddpcap_vs_ddp25_lo": cap["ratio_ci_lo"], "ddpcap_vs_ddp25_hi": cap["ratio_ci_hi"],
        "ddpcap_vs_ddp25_verdict": cap["verdict"],
        "ddp_predicted_ms": predicted["ddp_predicted_ms"], "ddpcap_measured_ms": ddpcap_ms,
        "ddp_prediction_error": predicted["ddp_predicted_ms"] / ddpcap_ms - 1,
        # the same against the ends of the measured median's interval over rounds
        "ddp_prediction_error_lo": predicted["ddp_predicted_ms"] / ddpcap_run["median_ci_hi"] - 1,
        "ddp_prediction_error_hi": predicted["ddp_predicted_ms"] / ddpcap_run["median_ci_lo"] - 1,
        "p4_predicted_ms": first["predicted_ms"], "p4_prediction_error": first["predicted_ms"] / best["median_ms"] - 1,
        "compute_p4_vs_ddp": same_work["ratio"], "compute_p4_vs_ddp_lo": same_work["ratio_ci_lo"],
        "compute_p4_vs_ddp_hi": same_work["ratio_ci_hi"],
        "p4_overlap_pct": overlap["overlap_pct"].median(), "p4_compute_slowdown": overlap["compute_slowdown"].median(),
        "gpus": f"{len(meta['gpus'])} x {meta['gpus'][0]['gpu_name']}",
        "commit": meta["commit"], "date_utc": meta["date_utc"],
    }


def main(predictor):
    rows = []
    for name in MODELS:
        folder = HERE / name
        steps = steps_table(folder, predictor)
        steps.to_csv(folder / "steps.csv", index=False)
        if name in SCALED:
            scaling(folder, predictor)
        calibration = json.loads((folder / "calibrate.calibration.json").read_text())
        r = row(folder)
        what = f"{r['model']}, {r['blocks']} blocks, seq {r['seq']}"
        what += f", over {r['transport']}" if r["transport"] != "nvlink" else ""
        predict.plot_layers(steps, calibration, folder / "steps.png", what,
                            title=f"MEASURED compute per backward step (phase 4, compute-only, round 1): {what}")
        rows.append(r)
    pd.DataFrame(rows).to_csv(HERE / "models.csv", index=False)


if __name__ == "__main__":
    main(sys.argv[1])
