"""stretch.csv of results/4xH200/predictions-d2d71bd-graph: per configuration and bucket size of sharded-ce, the
calibrated parts the 4-GPU predictions carry over from 2 GPUs, beside the same parts calibrated on the 4 GPUs in the
same allocation (../headline-graph/calibration, call C): the communication's time alone (comm_rise: 4-GPU over 2-GPU),
its stretch beside the compute (stretch_2gpu, stretch_4gpu) and the compute's slowdown beside it (slowdown_2gpu,
slowdown_4gpu). Run from the repository root."""
import json
import pathlib

import pandas as pd

from overlap_bench import packs

TWO = pathlib.Path("results/4xH200/predictions-d2d71bd-graph/calibration-2gpu")
FOUR = pathlib.Path("results/4xH200/headline-graph/calibration")
rows = []
for path in packs.glob(TWO, "*.calibration.json"):
    config = path.name.split(".")[0]
    two, four = (json.loads(packs.read_text(folder / path.name))["strategies"] for folder in (TWO, FOUR))
    for s2, s4 in zip(two, four):
        if s2["sync"] != "sharded-ce":
            continue
        assert s2["sync"] == s4["sync"] and s2["bytes"] == s4["bytes"], (config, s2["sync"])
        for k, plan_mb in enumerate(s2["plan_mb"]):
            rows.append({"config": config, "sync": s2["sync"], "plan_mb": plan_mb,
                         "comm_rise": s4["comm_ms"][k] / s2["comm_ms"][k], "stretch_2gpu": s2["stretch"][k],
                         "stretch_4gpu": s4["stretch"][k], "slowdown_2gpu": s2["slowdown"][k],
                         "slowdown_4gpu": s4["slowdown"][k]})
pd.DataFrame(rows).to_csv("results/4xH200/predictions-d2d71bd-graph/stretch.csv", index=False, float_format="%.4g")
