"""spread.csv of results/2xH200/headline-ddp-graph: per configuration and system, how far the contenders' medians
moved between rounds (the median over a system's contenders of compare.csv's median_ci_rel: half its 95 % interval
over the rounds, relative), in the eager headline at 3f56849 (../headline: both sides eager, 2 passes, 3 rounds) and
in this one at fd750ce (phase 4's and DDP's steps replayed from CUDA graphs, FSDP2 eager, 1 pass, 4 rounds). Run from
the repository root."""
import pathlib

import pandas as pd

from overlap_bench import packs

RUNS = {"eager (3f56849)": pathlib.Path("results/2xH200/headline"),
        "graphs (fd750ce)": pathlib.Path("results/2xH200/headline-ddp-graph")}
OUT = pathlib.Path("results/2xH200/headline-ddp-graph/spread.csv")
rows = []
for run, folder in RUNS.items():
    compare = packs.read_csv(folder / "compare" / "compare.csv")
    for (config, process), group in compare.groupby(["group", "process"], sort=False):
        rows.append({"run": run, "config": config, "system": {"p4": "phase 4"}.get(process, process),
                     "between_rounds": group["median_ci_rel"].median()})
pd.DataFrame(rows).to_csv(OUT, index=False, float_format="%.4f")
