"""spread.csv of results/1xH200/ddp-spread: per call, variant, mode, configuration and cap, the median over fresh
bench_ddp.py processes of their step medians (time_ms_p50) and the range of those medians over it (max - min, relative):
how far eager DDP's step moves between processes on the host-paced configurations, unbound and bound to cores (call
A: `none` unbound, `numa` the GPU's NUMA-local cores, `four` 4 cores), and eager against replayed from CUDA graphs
(call B: `eager`, `graph`). Run from the repository root."""
import pathlib
import re

import pandas as pd

from overlap_bench import packs

FOLDER = pathlib.Path("results/1xH200/ddp-spread")
frames = []
for path in [p for call in ("a", "b") for p in packs.glob(FOLDER / call, "*-[0-9].csv")]:
    variant, process = re.fullmatch(r"(\w+)-(\d)", path.stem).groups()
    frame = packs.read_csv(path).assign(call=path.parent.name.upper(), variant=variant, process=int(process))
    frames.append(frame)
rows = pd.concat(frames)
rows["config"] = rows["hidden"].astype(str) + "x" + rows["layers"].astype(str) + "x" + rows["batch"].astype(str)
rows["bucket_mb"] = rows["bucket_mb"].fillna(0)
table = rows.groupby(["call", "variant", "mode", "config", "bucket_mb"], sort=True)["time_ms_p50"].agg(
    ["median", "min", "max", "count"]).reset_index()
table["range_rel"] = (table["max"] - table["min"]) / table["median"]
table = table.rename(columns={"median": "median_ms", "count": "processes"})
table[["call", "variant", "mode", "config", "bucket_mb", "processes", "median_ms", "range_rel"]].to_csv(
    FOLDER / "spread.csv", index=False, float_format="%.4f")
