#!/usr/bin/env python3
"""The main job's verdict in words: one or two sentences per phase from the summary CSVs of a run folder, each with
its interval ("phase2-real: overlap hid 64 % of the communication [55, 71]; compute slowed 1 %; the step took 1.28x
its schedule bound and 0.54x the sequential one [0.49, 0.60]"), what a `!`, `n.r.` or `~` in its table means where
one appears, and what cannot hide on this machine (ranks sharing cores).

Usage: verdict.py RUN_DIR|SUMMARY.csv ... [--cores N]
"""
import math
import os
import pathlib

from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool
from overlap_bench.core import packs

OVERLAPPED = ("overlap", "thread", "nonblocking", "progress")


def number(row, column):
    value = row.get(column, math.nan)
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


NO_EFFECT = {"speedup": 1.0, "overlap_efficiency": 0.0, "overlap_pct": 0.0}


def resolved(row, metric):
    """The binaries' one rule (common/metrics.cpp, `resolved`): the `<metric>_resolved` column they write; for a
    summary written before it, the same rule: resolved unless the closed 95 % interval holds the no-effect value."""
    flag = number(row, f"{metric}_resolved")
    if not math.isnan(flag):
        return bool(flag)
    lo, hi = number(row, f"{metric}_ci_lo"), number(row, f"{metric}_ci_hi")
    return not (lo <= NO_EFFECT[metric] <= hi)


def interval(row, metric, scale=1.0, digits=0):
    lo, hi = number(row, f"{metric}_ci_lo"), number(row, f"{metric}_ci_hi")
    if math.isnan(lo) or math.isnan(hi):
        return ""
    return f" [{lo * scale:.{digits}f}, {hi * scale:.{digits}f}]"


def overlap_sentence(name, row, times):
    """One overlapped mode of a phase in words."""
    mode, t_ovl = row["mode"], number(row, "time_ms_p50")
    parts = []
    hidden = number(row, "overlap_pct")
    if not math.isnan(hidden):
        amount = "none" if hidden == 0 else f"{hidden:.0f} %"
        parts.append(f"{mode} hid {amount} of the communication{interval(row, 'overlap_pct')}"
                     + ("" if resolved(row, "overlap_pct") else " (not resolved: the interval holds 0)"))
    slowdown = number(row, "compute_slowdown")
    if not math.isnan(slowdown):
        parts.append(f"compute ran {abs(slowdown) * 100:.0f} % {'slower' if slowdown >= 0 else 'faster'} beside it")
    bound = times.get("bound", math.nan)
    if not math.isnan(bound) and bound > 0:
        model = row.get("bound_kind") == "model"
        kind = "schedule model (not a bound for this strategy)" if model else "schedule bound"
        parts.append(f"the step took {t_ovl / bound:.2f}x its {kind}")
    speedup = number(row, "speedup")
    if not math.isnan(speedup):
        hi, within = number(row, "speedup_ci_hi"), interval(row, "speedup", 1, 2)
        if not resolved(row, "speedup"):
            parts.append(f"no faster than sequential within its interval ({speedup:.2f}x{within})")
        elif hi < 1 or (math.isnan(hi) and speedup < 1):
            parts.append(f"overlapping made the step slower than sequential ({t_ovl:.3g} against "
                         f"{times.get('seq', math.nan):.3g} ms: speedup {speedup:.2f}x{within})")
        else:
            parts.append(f"{speedup:.2f}x faster than sequential{within}")
    return f"{name}: " + "; ".join(parts) + "."


def notes(frame):
    """What the table's marks mean, in words, where they appear (a column that is not a number is read as empty)."""
    import pandas as pd

    frame = frame.copy()
    for column in ("overlap_efficiency", "overlap_pct", "overlap_pct_ci_lo", "overlap_pct_ci_hi", "unstable",
                   "overlap_pct_resolved"):
        if column in frame:
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
    lines = []
    efficiency = frame["overlap_efficiency"] if "overlap_efficiency" in frame else None
    if efficiency is not None:
        above = frame[efficiency > 1]
        below = frame[efficiency < 0]
        if len(above):
            lines.append(f"  ! {', '.join(above['mode'])}: efficiency above 1: the isolated compute or communication "
                         "ran slower than its share of the overlapped step (noise or contention in the isolated runs)")
        if len(below):
            lines.append(f"  ! {', '.join(below['mode'])}: efficiency below 0: the overlapped step took longer than "
                         "compute and communication one after the other")
    if "overlap_pct_ci_lo" in frame:
        unresolved = frame[[not resolved(row, "overlap_pct") and not math.isnan(number(row, "overlap_pct"))
                            for row in frame.to_dict("records")]]
        if len(unresolved):
            lines.append(f"  n.r. {', '.join(unresolved['mode'])}: the share hidden is not resolved: its 95 % interval "
                         "over the iterations holds 0")
    if "unstable" in frame and (frame["unstable"] == 1).any():
        modes = ", ".join(frame[frame["unstable"] == 1]["mode"])
        lines.append(f"  ~ {modes}: unstable: the median moved more than +-5 % over the iterations (a busy machine or "
                     "too few --iters): read these rows with care")
    return lines


def crowding(name, frame, meta, cores):
    """Where MPI ranks and their threads outnumber the cores, nothing can hide: say so. (A rank runs its compute team,
    `omp_threads` in the metadata, and a communication thread.)"""
    ranks = int(frame["ranks"].iloc[0])
    team = number(meta, "omp_threads")
    per_rank = (team if not math.isnan(team) else 1) + 1
    # Phase 4 runs on GPUs and writes no device column (its ranks' host threads are not what hides its communication).
    phase4 = (frame["phase"] == "phase4").all()
    device = str(frame["device"].iloc[0]) if "device" in frame else ("gpu" if phase4 else "cpu")
    if ranks > 1 and cores and ranks * per_rank > cores and device == "cpu":
        return (f"{name}: {ranks} ranks with {per_rank:.0f} threads each share {cores} cores: communication can only "
                "hide where a core is free, so little can hide here")
    return ""


PHASE1_COLUMNS = ("kernel", "gflops", "first_loss", "final_loss")  # what a phase 1 verdict reads


def phase1_sentence(name, frame):
    missing = [c for c in PHASE1_COLUMNS if c not in frame]
    if missing:
        raise ob_tool.UsageError(f"{name}: a phase 1 summary without its column '{missing[0]}' (needed: "
                                 f"{', '.join(PHASE1_COLUMNS)})")
    rows = frame[frame["kernel"] == "iteration"]
    lines = []
    for _, row in rows.iterrows():
        variant = row.get("variant", "")
        text = f"{name}: {variant} {number(row, 'gflops'):.0f} GFLOP/s per step"
        if number(row, "diverged") == 1:
            text += f"; its loss diverged ({number(row, 'first_loss'):.3g} -> {number(row, 'final_loss'):.3g})"
        else:
            text += f"; the loss fell from {number(row, 'first_loss'):.3g} to {number(row, 'final_loss'):.3g}"
        lines.append(text + ".")
    return lines


def planned_sentences(name, frame):
    """Each planned point (phase 4 --plan auto) with its prediction: the step measured against the one the planner
    predicted for the plan it chose, and the error."""
    lines = []
    if "plan" not in frame or "predicted_ms" not in frame:
        return lines
    for _, row in frame[(frame["mode"] == "overlap") & (frame["plan"] == "auto")].iterrows():
        measured, predicted = number(row, "time_ms_p50"), number(row, "predicted_ms")
        if not (predicted > 0 and measured > 0):
            continue
        buckets = number(row, "buckets")
        chose = f"--sync {row.get('sync', 'nccl')}" + ("" if math.isnan(buckets) else f", {buckets:.0f} buckets")
        lines.append(f"  the planner's plan ({chose}): {measured:.4g} ms measured against {predicted:.4g} ms predicted "
                     f"(error {(measured / predicted - 1) * 100:+.1f} %)")
    return lines


def verdict(path, cores):
    frame = ob_csv.load_summary(path)
    meta = ob_csv.read_metadata(path)
    name = path.stem
    if (frame["phase"] == "phase1").all():
        return phase1_sentence(name, frame)
    times = {mode: float(t) for mode, t in zip(frame["mode"], frame["time_ms_p50"])}
    bound_kind = frame.loc[frame["mode"] == "bound", "bound_kind"] if "bound_kind" in frame else []
    overlapped = frame[frame["mode"].isin(OVERLAPPED)]
    lines = []
    if overlapped.empty:
        lines.append(f"{name}: no overlapped mode ran.")
    else:
        best = overlapped.sort_values("time_ms_p50").iloc[0]
        kind = {"bound_kind": str(bound_kind.iloc[0])} if len(bound_kind) else {}
        lines.append(overlap_sentence(name, {**best.to_dict(), **kind}, times))
        for _, other in overlapped.iterrows():
            if other["mode"] != best["mode"]:
                lines.append("  " + overlap_sentence("also", {**other.to_dict(), **kind}, times))
    lines += planned_sentences(name, frame)
    crowded = crowding(name, frame, meta, cores)
    if crowded:
        lines.append(crowded)
    if "ranks_per_gpu" in frame and number(frame.iloc[0], "ranks_per_gpu") > 1:
        lines.append(f"{name}: {number(frame.iloc[0], 'ranks_per_gpu'):.0f} ranks time-slice one GPU's compute "
                     "(--share-gpu): each rank's compute-only step already waits for the other ranks' kernels, and its "
                     "all-reduce hides behind their turns on the GPU, not behind a GPU of its own")
    if (frame["phase"] == "phase4").all() and int(frame["ranks"].iloc[0]) == 1:
        lines.append(f"{name}: one GPU: its all-reduce has no peer, so what hides here is a local pass over the "
                     "gradient, not communication between GPUs")
    return lines + notes(frame)


def main():
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("paths", nargs="+", type=ob_tool.input_path,
                        help="a run folder (scripts/run_all.sh's --out) or summary CSVs")
    parser.add_argument("--cores", type=ob_tool.whole(1, 1 << 20), default=os.cpu_count(),
                        help="cores of the machine that ran it")
    args = parser.parse_args()
    if args.cores is None or args.cores < 1:
        parser.error(f"--cores: '{args.cores}' is invalid: at least 1")
    summaries = []
    for text in args.paths:
        path = pathlib.Path(text)
        found = packs.glob(path, "*.csv") if path.is_dir() else [path]  # packed ones too
        summaries += [p for p in found if p.is_dir() or ob_csv.kind_of(p) == "summary" or not path.is_dir()]
    if not summaries:
        raise ob_tool.UsageError(f"{args.paths[0]}: no summary CSV in it")
    for path in summaries:
        print("\n".join(verdict(path, args.cores)))
    return 0


def cli():
    """The console command ob-verdict (pyproject.toml) and `python3 verdict.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
