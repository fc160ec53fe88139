#!/usr/bin/env python3
"""Power of each GPU over time from a power CSV (rank, gpu, t_us, power_w; phase 4 --power), with the overlapped
run's time span shaded when its timeline CSV is given.

Usage: plot_power.py POWER.csv -o power.png [--timeline TIMELINE.csv] [--mode overlap]
"""

import matplotlib.pyplot as plt

from overlap_bench.core import figures
from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool


def mode_spans(timeline, mode):
    """(start_ms, end_ms) of each iteration of `mode` (lanes "<mode>:..."), on the timeline's clock."""
    part = timeline[timeline["lane"].str.startswith(mode + ":")]
    grouped = part.groupby("iter").agg(start=("start_us", "min"), end=("end_us", "max"))
    return [(s / 1000.0, e / 1000.0) for s, e in zip(grouped["start"], grouped["end"])]


def plot(power, output, spans=()):
    fig, ax = plt.subplots(figsize=(10, 4))
    for (rank, gpu), part in power.groupby(["rank", "gpu"]):
        part = part.sort_values("t_us")
        ax.plot(part["t_us"] / 1000.0, part["power_w"], linewidth=1, label=f"rank {rank} GPU {gpu}")
    for index, (start, end) in enumerate(spans):
        ax.axvspan(start, end, color="orange", alpha=0.15, label="overlapped" if index == 0 else None)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("power (W)")
    ax.legend(fontsize=8, loc="lower right")
    figures.save_figure(fig, output)


def main():
    parser = figures.figure_parser(__doc__, "power", "power CSV")
    parser.add_argument("--timeline", type=ob_tool.input_file,
                        help="timeline CSV of the same run: shades the overlapped iterations")
    parser.add_argument("--mode", type=ob_tool.any_text, default="overlap",
                        help="the mode whose iterations are shaded (default overlap)")
    args = parser.parse_args()
    power = ob_csv.load_power(args.power)
    spans = mode_spans(ob_csv.load_timeline(args.timeline), args.mode) if args.timeline else []
    plot(power, args.output, spans)
    return 0


def cli():
    """The console command (pyproject.toml) and `python3 plot_power.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
