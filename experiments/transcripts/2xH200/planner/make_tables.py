#!/usr/bin/env python3
"""This folder's tables from its summaries: per planner sweep (planner-*.csv, graph/graph-*.csv) the plan --plan auto
chose, its step measured and predicted, the best fixed plan of the same sweep (same process) and how far the
predictions were off (planner-summary.csv, graph-summary.csv); per repeat process (repeats/*.csv) auto against the
25 and 64 MiB plans of the same process (repeats-summary.csv). Usage: python3 make_tables.py (from this folder)."""
import json
import pathlib

import pandas as pd

HERE = pathlib.Path(__file__).resolve().parent


def fixed_name(row):
    """A fixed plan as the sweep named it: layer (one bucket per layer) or its cap in MiB."""
    return "layer" if row.bucket_mb != row.bucket_mb else f"{row.bucket_mb:g} MiB"


def sweep_row(path):
    frame = pd.read_csv(path)
    steps = frame[frame["mode"] == "overlap"]
    auto = steps[steps["plan"] == "auto"].iloc[0]
    fixed = steps[steps["plan"] != "auto"]
    best = fixed.loc[fixed["time_ms_p50"].idxmin()]
    error = (steps["time_ms_p50"] / steps["predicted_ms"] - 1).abs()
    commit = json.loads(path.with_suffix(".meta.json").read_text()).get("commit", "")
    return {"run": path.stem, "commit": commit, "auto_sync": auto.sync, "auto_buckets": int(auto.buckets),
            "auto_ms": round(auto.time_ms_p50, 3), "auto_predicted_ms": round(auto.predicted_ms, 3),
            "best_fixed": fixed_name(best), "best_fixed_ms": round(best.time_ms_p50, 3),
            "auto_vs_best": round(auto.time_ms_p50 / best.time_ms_p50 - 1, 3),
            "within_10pct": f"{int((error <= 0.10).sum())} of {len(error)}", "largest_error": round(error.max(), 3)}


def repeat_row(path):
    frame = pd.read_csv(path)
    steps = frame[frame["mode"] == "overlap"]
    auto = steps[steps["plan"] == "auto"].iloc[0].time_ms_p50
    caps = {f"{r.bucket_mb:g}": r.time_ms_p50 for r in steps[steps["plan"] != "auto"].itertuples()}
    return {"run": path.stem, "auto_ms": round(auto, 3), "mb25_ms": round(caps["25"], 3), "mb64_ms": round(caps["64"], 3),
            "auto_vs_best_of_two": round(auto / min(caps["25"], caps["64"]) - 1, 3)}


pd.DataFrame([sweep_row(p) for p in sorted(HERE.glob("planner-[0-9]*.csv"))]).to_csv(HERE / "planner-summary.csv", index=False)
pd.DataFrame([sweep_row(p) for p in sorted((HERE / "graph").glob("graph-*.csv"))]).to_csv(HERE / "graph-summary.csv", index=False)
pd.DataFrame([repeat_row(p) for p in sorted((HERE / "repeats").glob("repeat-*.csv"))]).to_csv(HERE / "repeats-summary.csv", index=False)
