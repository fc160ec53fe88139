"""spread.csv of results/4xH200/headline-graph: per configuration and system, how far the contenders' medians moved
between rounds (the median over a system's contenders of compare.csv's median_ci_rel: half its 95 % interval over the
rounds, relative), in the eager headline at 3bd6762 (../headline) and the one with phase 4's steps replayed from CUDA
graphs at d2d71bd (this folder). Run from the repository root."""
import pathlib

import pandas as pd

RUNS = {"eager (3bd6762, 2 passes)": pathlib.Path("results/4xH200/headline"),
        "graph (d2d71bd, 1 pass)": pathlib.Path("results/4xH200/headline-graph")}
OUT = pathlib.Path("results/4xH200/headline-graph/spread.csv")
rows = []
for run, folder in RUNS.items():
    compare = pd.read_csv(folder / "compare" / "compare.csv")
    for (config, process), group in compare.groupby(["group", "process"], sort=False):
        rows.append({"run": run, "config": config, "system": {"p4": "phase 4"}.get(process, process),
                     "between_rounds": group["median_ci_rel"].median()})
pd.DataFrame(rows).to_csv(OUT, index=False, float_format="%.4f")
