#!/usr/bin/env python3
"""The interference map (phase4_chunked_nccl --mode interference): both sides of the contention in one picture.
Left, how much slower a backward GEMM of the model's shape runs while a collective runs beside it; right, how much
longer the collective takes while GEMMs run beside it; both against the message size, one line per strategy (and
per CTA cap or GEMM SM margin where those vary). A point where a loop outlasted the one meant to cover it is drawn
hollow.

Usage: plot_interference.py SUMMARY.csv [SUMMARY.csv ...] -o interference.png
"""

import itertools

import matplotlib.pyplot as plt
import matplotlib.ticker

from overlap_bench.core import experiment_lists
from overlap_bench.core import figures
from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool

# Columns that tell one line from another, as the label names them.
LINE_COLUMNS = [("sync", "{}"), ("nccl_max_ctas", "{:g} CTAs"), ("gemm_sm_margin", "margin {:g} SMs"),
                ("comm_dtype", "{}"), ("comm_priority", "{} priority")]
NEEDED = ["msg_mb", "compute_slowdown", "comm_stretch", "sync"]


def rows(frame):
    """The interference rows of a summary, with a `line` label from the columns that vary between them."""
    frame = frame[frame["mode"] == "interference"]
    if frame.empty:
        raise ob_tool.UsageError("no interference rows (phase4_chunked_nccl --mode interference writes them)")
    missing = [c for c in NEEDED if c not in frame.columns]
    if missing:
        raise ob_tool.UsageError(f"interference rows without column '{missing[0]}'")
    varying = [(c, f) for c, f in LINE_COLUMNS if c in frame.columns and frame[c].nunique(dropna=True) > 1]
    varying = varying or [("sync", "{}")]

    def label(row):
        parts = [f.format(row[c]) for c, f in varying if row[c] == row[c] and not (c != "sync" and row[c] == 0)]
        return ", ".join(parts) or "default"

    return frame.assign(line=frame.apply(label, axis=1))


def plot(frame, output, hardware=""):
    frame = rows(frame)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    # A strategy's own line keeps its colour in every map, given by its place in the one strategies list
    # (experiment_lists: experiments/headline.toml); other lines (a CTA cap, a margin) take the next free one.
    own = experiment_lists.strategy_colours()
    others = itertools.cycle([c for c in experiment_lists.PALETTE if c not in own.values()] or experiment_lists.PALETTE)
    for line, part in frame.groupby("line", sort=False):
        part = part.sort_values("msg_mb")
        colour = own.get(line) or next(others)
        covered = part["covered"].astype(bool) if "covered" in part else [True] * len(part)
        for ax, y in ((left, 100 * part["compute_slowdown"]), (right, part["comm_stretch"])):
            ax.plot(part["msg_mb"], y, color=colour, marker="o", label=line)
            hollow = [not c for c in covered]
            if any(hollow):
                ax.scatter(part["msg_mb"][hollow], y[hollow], facecolors="white", edgecolors=colour, zorder=3)
    sizes = sorted(frame["msg_mb"].unique())
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes)  # ticked at the measured sizes, written plainly
        ax.set_xticklabels([f"{s:g}" for s in sizes], fontsize=8, rotation=45)
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("message (MiB)")
        ax.grid(alpha=0.3)
    left.axhline(0, color="black", linewidth=0.8)
    right.axhline(1, color="black", linewidth=0.8)
    left.set_ylabel("GEMM slowdown beside the collective (%)")
    right.set_ylabel("collective time beside GEMMs / alone (x)")
    right.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8)  # outside the data
    first = frame.iloc[0]
    shape = ", ".join(f"{c} {first[c]:g}" for c in ("hidden", "layers", "batch") if c in frame.columns)
    fig.suptitle(f"interference map: a backward GEMM ({shape}) and one collective, alone and at once"
                 + (f"\n{hardware}" if hardware else ""), fontsize=9)
    figures.save_figure(fig, output)


def main():
    parser = figures.figure_parser(__doc__, "summary", "summary CSV(s) of --mode interference runs", nargs="+")
    args = parser.parse_args()
    frame = ob_csv.concat_summaries([ob_csv.load_summary(path) for path in args.summary])
    plot(frame, args.output, ob_csv.hardware_line(ob_csv.read_metadata(args.summary[0])))
    return 0


def cli():
    """The console command (pyproject.toml) and `python3 plot_interference.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
