"""Why a headline's best step misses its floor, in time (issue 49, METRICS.md "The headline"): for every configuration
whose best phase 4 contender ran more than FLOOR_LIMIT x its floor, a Gantt of that contender's median breakdown step
and the next in the last round's phase 4 process (every rank's compute and comm streams) under its own compute-only
steps, each from 0, with the floor, the schedule's bound and the measured step drawn: why-<config>.png. The events
drawn are kept in why.timeline.csv (the suite's timeline schema), from which --analyze draws them again once the
round's whole timeline is gone (into the folder analysed or another).
"""
import math
import pathlib

import numpy as np
import pandas as pd

from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool
from overlap_bench.report import plot_gantt

FLOOR_LIMIT = 1.05  # issue 49's target: the best step within 1.05x its floor
TIMELINE = "why.timeline.csv"
COLUMNS = ["rank", "lane", "name", "iter", "chunk", "start_us", "end_us", "point"]


def contender_point(points, config, label, strategies):
    """The timeline point of phase 4 contender `label` on `config` (ob-headline's labels: `planned` is the point of
    plan=auto; a strategy's, its fixed plan, nccl unnamed in the point; `sync-cap` where several caps ran), or None
    where no single point matches."""
    sync, _, cap = label.rpartition("-") if label not in strategies and "-" in label else (label, "", "")
    found = []
    for point in points:
        parts = [part.strip() for part in point.split(",")]
        if f"shape={config}" not in parts:
            continue
        auto = "plan=auto" in parts
        named = next((part[len("sync="):] for part in parts if part.startswith("sync=")), "nccl")
        if (label == "planned" and auto) or (label != "planned" and not auto and named == sync and
                                             (not cap or f"bucket-mb={cap}" in parts)):
            found.append(point)
    return found[0] if len(found) == 1 else None


def median_step(events, mode):
    """The events of `mode`'s median breakdown step (the lower median of the steps' spans over every rank) and of the
    step after it (before it, where it is the last): two consecutive steps, so that a schedule whose communication runs
    on into the next step (the carry schedule's) shows where it went."""
    mine = events[events["lane"].str.startswith(f"{mode}:")]
    if mine.empty:
        return mine
    steps = mine.groupby("iter")
    spans = (steps["end_us"].max() - steps["start_us"].min()).sort_values()
    order = sorted(spans.index)
    at = order.index(spans.index[(len(spans) - 1) // 2])
    pair = order[at:at + 2] if at + 1 < len(order) else order[max(0, at - 1):at + 1]
    return mine[mine["iter"].isin(pair)]


def source_timeline(timeline, out):
    """`timeline` (the last round's phase 4 timeline, DIR/compare/runs/...), else the events kept by an earlier call
    (TIMELINE in `out`, or in DIR), else None."""
    found = [ob_csv.stored(path) for path in (timeline, out / TIMELINE, timeline.parent.parent.parent / TIMELINE)]
    return next((path for path in found if path is not None), None)


def figures(timeline, out, headline, strategies):
    """why-<config>.png for every configuration of `headline` (headline.csv's frame) whose best misses FLOOR_LIMIT x
    its floor and whose events `timeline` (the last round's phase 4 timeline) or a kept TIMELINE holds; writes
    TIMELINE; returns the figures written."""
    out = pathlib.Path(out)
    source = source_timeline(pathlib.Path(timeline), out)
    if source is None:
        return []
    timeline = ob_csv.load_timeline(source)
    points = ob_csv.timeline_points(timeline)
    kept, written = [], []
    for _, row in headline.iterrows():
        if not row["best_vs_floor"] > FLOOR_LIMIT:
            continue
        point = contender_point(points, row["config"], row["best"], strategies)
        events = timeline[timeline["point"] == point] if point is not None else timeline.iloc[0:0]
        steps = [median_step(events, mode) for mode in ("compute", "overlap")]
        if any(step.empty for step in steps):
            continue
        kept += steps
        drawn = []
        for step in steps:  # each mode's step from 0, its streams only (no host lane)
            step = step[step["lane"].str.endswith((":compute", ":comm"))].copy()
            origin = step["start_us"].min()
            step["start_us"] -= origin
            step["end_us"] -= origin
            step["iter"] -= step["iter"].min()
            drawn.append(step)
        frame = pd.concat(drawn)
        marks = {"floor": row["floor_ms"], "bound": row.get("best_bound_ms", math.nan), "step": row["best_ms"]}
        title = (f"{row['config']}: {row['best']}, {row['best_vs_floor']:.3f}x its floor; its schedule's "
                 f"{row.get('best_bound_kind', 'bound')} {row.get('bound_vs_floor', math.nan):.3f}x the floor\n"
                 f"median breakdown step and the next of {point} under its compute-only steps")
        path = out / f"why-{row['config']}.png"
        plot_gantt.plot(frame, path, title, {k: v for k, v in marks.items() if np.isfinite(v)})
        written.append(path)
    if kept and source != ob_csv.stored(out / TIMELINE):
        ob_tool.write_text_atomic(out / TIMELINE, pd.concat(kept)[COLUMNS].to_csv(index=False))
    return written
