#!/usr/bin/env python3
"""The calibrations of call K side by side: per configuration, commit, strategy and calibrated bucket size, the
slowdown and stretch the planner calibrated, and the compute-only step and its backward's parts (slowdowns.csv).

Usage: python3 slowdowns.py results/2xH200/breakdown-calibration
"""
import json
import pathlib
import sys

import pandas as pd


def main(folder):
    rows = []
    for path in sorted(pathlib.Path(folder).glob("*.calibration.json")):
        calibration = json.loads(path.read_text())
        config = path.name.split("-", 1)[1].removesuffix(".calibration.json")
        compute = calibration["compute"]
        for strategy in calibration["strategies"]:
            for k, mb in enumerate(strategy["plan_mb"]):
                rows.append({"config": config, "commit": calibration["commit"][:7], "sync": strategy["sync"],
                             "plan_mb": mb, "slowdown": strategy["slowdown"][k], "stretch": strategy["stretch"][k],
                             "compute_ms": compute["iteration_ms"], "backward_parts_ms": sum(compute["step_ms"])})
    table = pd.DataFrame(rows).sort_values(["config", "sync", "plan_mb", "commit"], kind="stable")
    table.round(4).to_csv(pathlib.Path(folder) / "slowdowns.csv", index=False)


if __name__ == "__main__":
    main(sys.argv[1])
