#!/usr/bin/env python3
"""models.csv from this folder's predictions: per model, sequence length, network and GPU count (8, 64, 1024) the
strategy and plan predicted best, its step, DDP's recommended bucket_cap_mb and its step, and the commits of the
calibration and of the predictor that made them (its --version). Usage: python3 make_table.py PHASE4_PREDICT."""
import pathlib
import re
import subprocess
import sys

import pandas as pd

HERE = pathlib.Path(__file__).resolve().parent


def main(predictor):
    version = subprocess.run([predictor, "--version"], capture_output=True, text=True, check=True).stdout
    commit = version.split(" commit ", 1)[1].split(",", 1)[0]
    rows = []
    for path in sorted(HERE.glob("predict-*.csv")):
        seq = int(re.fullmatch(r"predict-.*-(\d+)", path.stem).group(1))
        frame = pd.read_csv(path)
        for r in frame[frame["ranks"].isin([2, 8, 64, 1024])].itertuples():
            if r.ranks == 2 and r.link != frame["link"].iloc[0]:
                continue  # within a node the network does not matter: one row
            rows.append({"model": r.model, "seq": seq, "link": r.link if r.ranks > 8 else "NVLink", "ranks": r.ranks,
                         "sync": r.sync, "buckets": r.buckets, "predicted_ms": r.predicted_ms,
                         "ddp_bucket_cap_mb": r.ddp_bucket_cap_mb, "ddp_predicted_ms": r.ddp_predicted_ms,
                         "calibration_commit": r.calibration_commit, "predictor_commit": commit})
    table = pd.DataFrame(rows).drop_duplicates(subset=["model", "seq", "link", "ranks"])
    table.to_csv(HERE / "models.csv", index=False)


if __name__ == "__main__":
    main(sys.argv[1])
