"""rises.csv of results/4xH200/predictions-copies: for the two sessions whose 4-GPU headline was set against
predictions from a 2-GPU calibration (d2d71bd, 85378b9), per configuration, how sharded-ce's parts rose from its 2-GPU
calibration to its 4-GPU one (both published): the forward's gathers of one layer's tensor (medians; `gather_rise`)
beside what the planner says for them, as copies (`copies_rise`: phase4_chunked_nccl/planner/rank_rise.cpp's
copies_rise, restated here) and as before, as ce's all-reduce of that size rose (`twin_rise`, the calibrations' own
ce); and the deferred updates (sums; `update_rise`) beside the traffic rule (`update_rule`, rank_rise.cpp's
update_rise: 1.5 / 2 from 2 to 4 ranks) and the 1 / ranks share used before. Run from the repository root."""
import json
import pathlib

import numpy as np
import pandas as pd

from overlap_bench import packs

R = pathlib.Path("results")
SESSIONS = {"d2d71bd": (R / "4xH200/predictions-d2d71bd-graph/calibration-2gpu", R / "4xH200/headline-graph/calibration"),
            "85378b9": (R / "2xH200/headline-85378b9/calibration", R / "4xH200/headline-85378b9/calibration")}


def strategy(folder, config, sync):
    strategies = json.loads(packs.read_text(folder / f"{config}.calibration.json"))["strategies"]
    return next(s for s in strategies if s["sync"] == sync)


def comm_at(s, nbytes):
    """The calibrated time at `nbytes`, linear between the sizes around it (StrategyCalibration::comm_ms_at)."""
    return float(np.interp(nbytes, s["bytes"], s["comm_ms"]))


def copies_rise(s, nbytes, calibrated, ranks):
    """rank_rise.cpp's copies_rise: the strategy's own line at that size as per-copy latency and bytes' share."""
    b = np.array(s["bytes"])
    i = int(min(max(np.searchsorted(b, nbytes), 1), len(b) - 1))
    slope = (s["comm_ms"][i] - s["comm_ms"][i - 1]) / (b[i] - b[i - 1])
    latency = s["comm_ms"][i - 1] - slope * b[i - 1]

    def copies(n):
        return latency * (n - 1) / (calibrated - 1) + slope * nbytes * ((n - 1) / n) / ((calibrated - 1) / calibrated)
    return copies(ranks) / copies(calibrated)


rows = []
for session, (two, four) in SESSIONS.items():
    for path in packs.glob(two, "*.calibration.json"):
        config = path.name.split(".")[0]
        hidden = int(config.split("x")[0])
        nbytes = hidden * hidden * 4.0
        s2, s4 = strategy(two, config, "sharded-ce"), strategy(four, config, "sharded-ce")
        c2, c4 = strategy(two, config, "ce"), strategy(four, config, "ce")
        rows.append({"session": session, "config": config, "tensor_mib": nbytes / (1 << 20),
                     "gather_rise": np.median(s4["sharded"]["gather_ms"]) / np.median(s2["sharded"]["gather_ms"]),
                     "copies_rise": copies_rise(s2, nbytes, 2, 4), "twin_rise": comm_at(c4, nbytes) / comm_at(c2, nbytes),
                     "update_rise": sum(s4["sharded"]["update_ms"]) / sum(s2["sharded"]["update_ms"]),
                     "update_rule": (1 + 2 / 4) / (1 + 2 / 2), "update_before": 2 / 4})
pd.DataFrame(rows).to_csv(R / "4xH200/predictions-copies/rises.csv", index=False, float_format="%.4g")
