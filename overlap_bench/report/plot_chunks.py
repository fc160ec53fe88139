#!/usr/bin/env python3
"""Per-chunk compute and communication durations across iterations (timing consistency), from a timeline CSV.

Usage: plot_chunks.py TIMELINE.csv -o chunks.png [--lanes overlap]
"""

import matplotlib.pyplot as plt

from overlap_bench.core import figures
from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool


def per_chunk(frame, lanes):
    """(lane kind, chunk) -> durations in ms over iterations, for events that belong to a chunk."""
    frame = frame[frame["chunk"] >= 0]
    if lanes:
        frame = frame[frame["lane"].apply(lambda lane: any(part in lane for part in lanes))]
    if frame.empty:
        raise ob_tool.UsageError("no per-chunk events in this timeline")
    frame = frame.assign(kind=frame["lane"] + " " + frame["name"])
    return {key: part["duration_us"].div(1000.0).tolist() for key, part in frame.groupby(["kind", "chunk"])}


def plot(groups, output):
    kinds = sorted({kind for kind, _ in groups})
    fig, axes = plt.subplots(len(kinds), 1, figsize=(10, 2.4 * len(kinds)), squeeze=False)
    for ax, kind in zip(axes[:, 0], kinds):
        chunks = sorted(chunk for k, chunk in groups if k == kind)
        ax.boxplot([groups[(kind, c)] for c in chunks], positions=range(len(chunks)), widths=0.6, showfliers=True)
        step = max(1, len(chunks) // 25)  # readable at 50 chunks
        ax.set_xticks(range(0, len(chunks), step))
        ax.set_xticklabels([str(c) for c in chunks][::step], fontsize=8)
        ax.set_ylabel("ms")
        ax.set_title(kind, fontsize=9)
    axes[-1, 0].set_xlabel("chunk (phase 4 backward: layer; allreduce: bucket)")
    figures.save_figure(fig, output)


def main():
    parser = figures.figure_parser(__doc__, "timeline", "timeline CSV")
    parser.add_argument("--lanes", type=ob_tool.listed(ob_tool.any_text), default=[],
                        help="lanes containing any of these words (default: all)")
    args = parser.parse_args()
    plot(per_chunk(ob_csv.load_timeline(args.timeline), args.lanes), args.output)
    return 0


def cli():
    """The console command (pyproject.toml) and `python3 plot_chunks.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
