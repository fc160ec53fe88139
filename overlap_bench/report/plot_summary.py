#!/usr/bin/env python3
"""Bar chart of a summary CSV: per configuration, sequential, overlapped, ideal, bound, compute-only and comm-only
iteration times (the bar: the median; the whisker: from the fastest iteration to the 95th percentile), each mode in
its fixed colour, the overlapped speedup over sequential annotated, the hardware and commit in the title.

Usage: plot_summary.py SUMMARY.csv [MORE.csv ...] -o bars.png
"""

import pathlib

import matplotlib.pyplot as plt
import pandas as pd

from overlap_bench.core import figures
from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool

ORDER = ["seq", "overlap", "thread", "nonblocking", "ideal", "bound", "bound_ref", "compute", "comm"]


def bars(frame):
    """Rows per (configuration label, system, mode) with p50 and p95, in a fixed mode order."""
    columns = ob_csv.config_columns(frame)
    frame = frame.copy()
    frame["config"] = frame.apply(lambda r: ob_csv.config_label(r, columns), axis=1)
    frame = frame[frame["mode"].isin(ORDER)]
    if frame.empty:
        raise ob_tool.UsageError(f"no row of a mode this chart draws ({', '.join(ORDER)})")
    frame["order"] = frame["mode"].map(ORDER.index)
    return frame.sort_values(["config", "system", "order"])


def plot(frame, output, hardware="", name=""):
    configs = list(dict.fromkeys(frame["config"]))
    fig, axes = plt.subplots(len(configs), 1, figsize=(10, 2.8 * len(configs) + 0.4), squeeze=False)
    for ax, config in zip(axes[:, 0], configs):
        part = frame[frame["config"] == config]
        labels = [m if s == "overlap-bench" else f"{s.replace('pytorch-', '')}\n{m}"
                  for s, m in zip(part["system"], part["mode"])]
        # Asymmetric whiskers from the data: down to the fastest iteration, up to the 95th percentile.
        below = (part["time_ms_p50"] - part["time_ms_min"]).clip(lower=0)
        above = (part["time_ms_p95"] - part["time_ms_p50"]).clip(lower=0)
        colours = [figures.colour(m, figures.MODE_COLOURS) for m in part["mode"]]
        ax.bar(range(len(part)), part["time_ms_p50"], yerr=[below, above], color=colours, capsize=3)
        ax.set_xticks(range(len(part)))
        ax.set_xticklabels(labels, fontsize=7, rotation=30, ha="right")
        ax.set_ylabel("iteration (ms)")
        ax.set_title(config, fontsize=9)
        for x, (mode, speedup) in enumerate(zip(part["mode"], part.get("speedup", pd.Series(index=part.index)))):
            if pd.notna(speedup) and mode not in ("seq", "ideal", "bound", "compute", "comm"):
                ax.annotate(f"{speedup:.2f}x", (x, part["time_ms_p50"].iloc[x]), ha="center", va="bottom", fontsize=8)
    iterations = int(frame["iters"].max()) if "iters" in frame else 0
    fig.suptitle(" - ".join(t for t in (name, hardware) if t) + "\n" +
                 f"bar: median of {iterations} iterations (slowest rank); whisker: fastest to 95th percentile",
                 fontsize=9)
    figures.save_figure(fig, output)


def main():
    parser = figures.figure_parser(__doc__, "summaries", "summary CSVs (drawn side by side, e.g. with pytorch-ddp)",
                                  nargs="+")
    args = parser.parse_args()
    frame = ob_csv.concat_summaries([ob_csv.load_summary(path) for path in args.summaries])
    try:
        drawn = bars(frame)
    except ob_tool.UsageError as error:
        raise ob_tool.UsageError(f"{', '.join(map(str, args.summaries))}: {error}") from None
    plot(drawn, args.output, ob_csv.hardware_line(ob_csv.read_metadata(args.summaries[0])),
         ", ".join(pathlib.Path(p).stem for p in args.summaries))
    return 0


def cli():
    """The console command (pyproject.toml) and `python3 plot_summary.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
