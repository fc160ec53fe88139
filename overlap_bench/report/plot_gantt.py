#!/usr/bin/env python3
"""Gantt chart of a timeline CSV: one row per rank x lane, bars coloured by task (the same colour per task in every
chart), each bucket or chunk outlined so that adjacent ones show their boundary, iteration boundaries marked.

Usage: plot_gantt.py TIMELINE.csv -o gantt.png [--iter 0,1] [--ranks 0,1] [--lanes overlap] [--point bucket_mb=25]

A sweep's timeline holds every point's events: one point is drawn, the first unless --point names another.
"""

import matplotlib.pyplot as plt

from overlap_bench.core import figures
from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool


def select(frame, iters, ranks, lanes, point=None):
    """The events to draw: one sweep point (`point`, else the first), the chosen iterations, ranks and lanes
    (substring match)."""
    points = ob_csv.timeline_points(frame)
    if point is not None and point not in points:
        raise ob_tool.UsageError(f"--point '{point}' is not in this timeline (it has: {', '.join(points)})")
    frame = frame[frame["point"] == (points[0] if point is None else point)]
    if iters:
        frame = frame[frame["iter"].isin(iters)]
    if ranks:
        frame = frame[frame["rank"].isin(ranks)]
    if lanes:
        frame = frame[frame["lane"].apply(lambda lane: any(part in lane for part in lanes))]
    if frame.empty:
        raise ob_tool.UsageError("no events match --iter/--ranks/--lanes")
    return frame


MARK_COLOURS = ["#222222", "#9467bd", "#d62728"]


def plot(frame, output, title, marks=None):
    """Draws `frame`'s events; `marks` (name -> ms from the frame's first event) as dashed vertical lines."""
    rows = sorted({(r, lane) for r, lane in zip(frame["rank"], frame["lane"])})
    names = sorted(frame["name"].unique())
    colours = {name: figures.colour(name, figures.TASK_COLOURS) for name in names}
    origin = frame["start_us"].min()
    fig, ax = plt.subplots(figsize=(12, 1.0 + 0.45 * len(rows)))
    for y, (rank, lane) in enumerate(rows):
        events = frame[(frame["rank"] == rank) & (frame["lane"] == lane)]
        spans = [((s - origin) / 1000.0, d / 1000.0) for s, d in zip(events["start_us"], events["duration_us"])]
        ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=[colours[n] for n in events["name"]], edgecolor="white",
                       linewidth=0.4)
    for start in frame.groupby("iter")["start_us"].min():  # iteration boundaries
        ax.axvline((start - origin) / 1000.0, color="grey", linestyle=":", linewidth=0.8)
    for k, (name, ms) in enumerate((marks or {}).items()):
        colour = MARK_COLOURS[k % len(MARK_COLOURS)]
        ax.axvline(ms, color=colour, linestyle="--", linewidth=1.0)
        ax.annotate(f"{name} {ms:.3g} ms", (ms, 0), xycoords=("data", "axes fraction"), xytext=(2, 2 + 9 * k),
                    textcoords="offset points", fontsize=7, color=colour)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"rank {r} {lane}" for r, lane in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    ax.set_title(title)
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=colours[n]) for n in names], labels=names, fontsize=8,
              loc="upper left", bbox_to_anchor=(1.0, 1.0), borderaxespad=0.2)  # outside the data
    figures.save_figure(fig, output)


def main():
    parser = figures.figure_parser(__doc__, "timeline", "timeline CSV written by a phase binary")
    parser.add_argument("--iter", type=ob_tool.listed(ob_tool.whole(0)), default=[],
                        help="iterations to draw, e.g. 0,1 (default: all)")
    parser.add_argument("--ranks", type=ob_tool.listed(ob_tool.whole(0)), default=[],
                        help="ranks to draw (default: all)")
    parser.add_argument("--lanes", type=ob_tool.listed(ob_tool.any_text), default=[],
                        help="lanes containing any of these words, e.g. seq,overlap")
    parser.add_argument("--point", type=ob_tool.any_text, default=None,
                        help="the sweep point to draw, as the timeline's point column "
                        "names it, e.g. bucket_mb=25 (default: the first)")
    args = parser.parse_args()
    frame = select(ob_csv.load_timeline(args.timeline), args.iter, args.ranks, args.lanes, args.point)
    hardware = ob_csv.hardware_line(ob_csv.timeline_metadata(args.timeline))
    point = frame["point"].iloc[0]
    title = f"{args.timeline}" + (f" ({point})" if point else "") + (f"\n{hardware}" if hardware else "")
    plot(frame, args.output, title)
    return 0


def cli():
    """The console command (pyproject.toml) and `python3 plot_gantt.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
