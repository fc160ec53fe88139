"""before-after.csv of results/2xH200/trace-graph-eager: per job (rank 0's row; the analysis is the slowest rank's
per step, the same on both), the analyzer's total added time against the job's unprofiled step minus its
compute-only step, as ../trace-graph measured it (replays alone: the wrapper's kernels counted as compute) and as
this folder did (one eager step traced first): error_before, error_after (total added / target - 1), and the
wrapper's kernels found now. Different calls: each error is of its own call's job, not divided across them. Run
from the repository root."""
import pathlib

import pandas as pd

from overlap_bench import packs

R = pathlib.Path("results/2xH200")
rows = []
for name in ("check.csv", "check-gpt2-xl.csv"):
    before = packs.read_csv(R / "trace-graph" / name).query("rank == 0").set_index("label")
    after = packs.read_csv(R / "trace-graph-eager" / name).query("rank == 0").set_index("label")
    for label in after.index:
        rows.append({"label": label, "error_before": before["error_total"].get(label, float("nan")),
                     "error_after": after.loc[label, "error_total"],
                     "wrapper_gpu_ms": after.loc[label, "wrapper_gpu_ms"], "verdict": after.loc[label, "verdict"]})
pd.DataFrame(rows).to_csv(R / "trace-graph-eager/before-after.csv", index=False, float_format="%.4g")
