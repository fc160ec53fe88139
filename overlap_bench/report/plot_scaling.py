#!/usr/bin/env python3
"""Iteration time of each mode against a swept parameter (chunks, bucket_mb, buckets, nccl_max_ctas or ranks),
with the overlapped run's overlap efficiency on a second axis.

Usage: plot_scaling.py SUMMARY.csv --x chunks|bucket_mb|buckets|nccl_max_ctas|ranks -o scaling.png
"""

import matplotlib.pyplot as plt
import matplotlib.ticker

import pandas as pd

from overlap_bench.core import figures
from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool

X_CHOICES = ["chunks", "bucket_mb", "buckets", "nccl_max_ctas", "nccl_min_ctas", "accum_steps", "ranks"]
OVERLAPPED = ["overlap", "thread", "nonblocking"]


def series(frame, x):
    """mode -> (x values, p50 times) sorted by x, for the modes that vary with x."""
    if x not in frame.columns:
        raise ob_tool.UsageError(f"the summary has no column '{x}'")
    values = pd.to_numeric(frame[x], errors="coerce")
    bad = frame.index[frame[x].notna() & ~values.apply(lambda v: v == v and abs(v) != float("inf"))]
    if len(bad):
        raise ob_tool.UsageError(f"column '{x}', row {bad[0] + 1}: '{frame[x].loc[bad[0]]}' is not a finite number")
    frame = frame.assign(**{x: values})
    out = {}
    for mode, part in frame.groupby("mode"):
        part = part.dropna(subset=[x]).sort_values(x)
        if part[x].nunique() > 1:
            out[mode] = (part[x].tolist(), part["time_ms_p50"].tolist())
    if not out:
        raise ob_tool.UsageError(f"'{x}' takes only one value in this summary: nothing to plot against")
    return out


def plot(frame, x, output, hardware=""):
    lines = series(frame, x)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for mode, (xs, ys) in sorted(lines.items()):
        ax.plot(xs, ys, marker="o", label=mode, linestyle="--" if mode in ("ideal", "bound") else "-",
                color=figures.colour(mode, figures.MODE_COLOURS))
    ax.set_xlabel(x + (" (MiB)" if x.endswith("_mb") else ""))
    ax.set_ylabel("iteration time p50 (ms)")
    if x in ("bucket_mb", "chunks", "buckets") and min(min(v[0]) for v in lines.values()) > 0:
        ax.set_xscale("log")
        swept = sorted({v for xs, _ in lines.values() for v in xs})
        ax.set_xticks(swept)  # ticked at the swept values, written plainly (not 6x10^0)
        ax.set_xticklabels([f"{v:g}" for v in swept], fontsize=8)
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    if "overlap_efficiency" in frame.columns:
        ax2 = ax.twinx()
        for mode in OVERLAPPED:
            part = frame[frame["mode"] == mode].dropna(subset=[x, "overlap_efficiency"]).sort_values(x)
            if len(part) > 1:
                ax2.plot(part[x], part["overlap_efficiency"], color="black", marker="x", linewidth=0.8,
                         label=f"{mode} efficiency")
        ax2.set_ylabel("overlap efficiency")
        ax2.legend(loc="lower left", bbox_to_anchor=(1.08, 0.0), fontsize=8)
    ax.legend(loc="upper left", bbox_to_anchor=(1.08, 1.0), fontsize=8)  # outside the data
    ax.set_title(" ".join(sorted(set(frame["phase"]))) + f": time against {x}" + (f"\n{hardware}" if hardware else ""),
                 fontsize=9)
    figures.save_figure(fig, output)


def main():
    parser = figures.figure_parser(__doc__, "summary", "summary CSV of a sweep")
    parser.add_argument("--x", type=ob_tool.any_text, required=True, choices=X_CHOICES, help="the swept column")
    args = parser.parse_args()
    try:
        plot(ob_csv.load_summary(args.summary), args.x, args.output,
             ob_csv.hardware_line(ob_csv.read_metadata(args.summary)))
    except ob_tool.UsageError as error:
        message = str(error)
        raise ob_tool.UsageError(message if message.startswith(str(args.summary)) else f"{args.summary}: {message}")
    return 0


def cli():
    """The console command (pyproject.toml) and `python3 plot_scaling.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
