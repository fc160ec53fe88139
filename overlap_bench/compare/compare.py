#!/usr/bin/env python3
"""ob-compare: contenders measured in R rounds of fresh processes in one allocation, the processes' order shuffled
each round from a recorded seed; each contender's figure is the median time of one row of a summary CSV, read every
round; for each ratio to a baseline a 95 % interval by bootstrap over rounds, a verdict (faster, slower or not
resolved) and the ratio's two factors: compute-only ratio (the same processes' compute-only rows) and overhead ratio
(each side's step over its own compute-only step).

A contender is NAME=COMMAND (or NAME:MODE=COMMAND to read another row than --mode): its own process, COMMAND any
shell command line that writes overlap-bench's summary CSV to {csv} and holds one row of that mode. Or it reads a
row of a process that many contenders share: --process PROC=COMMAND runs once per round (COMMAND may take {seed}, a
seed of its own each round, as phase 4's --order-seed and bench_ddp.py's do), and NAME[:MODE]=@PROC[KEY=VALUE,...]
reads the one row of that mode whose columns hold those values (numbers compared as numbers). Process start-up,
NCCL set-up and warm-up are then paid once a round, not once a contender.

A name LABEL@GROUP puts a contender in a group (a configuration, say): a baseline of labels (ddp-25,ddp-64) is then
resolved in each group, and contenders are compared with their own group's. A baseline of several names is the
fastest of them by the median over rounds, chosen again inside every bootstrap resample ("DDP at its best cap").
Resampling is paired (whole rounds), so a drift that slows every contender of a round cancels in the ratio. A
contender's compute-only time is its process's --compute-mode row (default: compute) matching its selection on the
keys that row has; where both sides have one, the ratio is split in two, each factor with its interval, and the
sentence says which carries it. A step faster than its own compute-only step beyond its interval is flagged.

--also-mode MODE summarises another row of the same runs the same way into compare.MODE.csv.

Writes into --out: compare.csv, compare.rounds.csv (every contender of every round), compare.meta.json (commit,
host, date, command, seed, processes, contenders, orders, the first run's hardware), compare.png and the processes'
own outputs under runs/ (r<round>-<process>.csv and .log). The folder is locked while it runs (a second comparison
into it is refused) and written whole at the end or not at all: nothing is read that this invocation did not write.
Exit codes: 0; 1 when a contender's check failed (exit 1); 2 for bad usage; 3 when a contender failed otherwise (or
wrote a time outside the summary schema's range: a positive one); 77 when a contender was skipped (its hardware
is absent).

--deadline SECONDS fits the comparison into an allocation's time: a round starts only while the longest round so far
still fits before it, a run it cuts drops that round whole, and the complete rounds, at least two, are summarised.

Usage:
  ob-compare --out results/runs/cmp --rounds 5 --baseline ddp \\
    --contender "nccl=mpirun -np 2 build/gpu/phase4_chunked_nccl/phase4_chunked_nccl --sync nccl --csv {csv}" \\
    --contender "ddp=torchrun --nproc_per_node=2 -m overlap_bench.ddp.bench_ddp --bucket-mb 25 --csv {csv}"
  ob-compare --out cmp --baseline ddp-25,ddp-64 \\
    --process "p4=mpirun -np 2 phase4_chunked_nccl --sweep shape=4096x16x512,2048x24x1024 --sweep sync=nccl,ce \\
               --order-seed {seed} --csv {csv}" \\
    --process "ddp=torchrun --nproc_per_node=2 -m overlap_bench.ddp.bench_ddp --configs 4096,16,512 2048,24,1024 \\
               --bucket-mb 25 64 --order-seed {seed} --csv {csv}" \\
    --contender "nccl@4096=@p4[hidden=4096,sync=nccl]" --contender "ddp-25@4096=@ddp[hidden=4096,bucket_mb=25]" ...
"""
import json
import math
import os
import platform
import socket
import sys
import time

import numpy as np
import pandas as pd

from overlap_bench.compare import compare_runs
from overlap_bench.core import compare_stats
from overlap_bench.core import figures
from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool
from overlap_bench.compare.compare_runs import ContenderFailed, PastDeadline
from overlap_bench.core.staging import Staging
# Named here for others: PROCESS_NAME (ob-headline's and ob-gate's), the statistics (the tests').
from overlap_bench.compare.compare_spec import PROCESS_NAME, parse_args  # noqa: F401
from overlap_bench.core.compare_stats import (UNSTABLE_REL, RESAMPLES, bootstrap_ratios, schedule,  # noqa: F401
                                         sentence, verdict)

def _matches(column, value):
    """Rows of `column` that hold `value`: numerically where it is a number, else as text."""
    try:
        number = float(value)
    except ValueError:
        return column.astype(str) == value
    numeric = pd.to_numeric(column, errors="coerce")
    return numeric.notna() & np.isclose(numeric.fillna(0), number, rtol=1e-9, atol=0)


def select(frame, mode, selector, ignore_empty=False):
    """The rows of `mode` holding every (key, value) of `selector`; with `ignore_empty`, keys that those rows leave
    empty everywhere (a compute-only row has no bucket cap) are not asked of them."""
    rows = frame[frame["mode"] == mode]
    for key, value in selector:
        if key not in rows.columns or rows[key].isna().all():
            if ignore_empty:
                continue
            return rows.iloc[0:0]
        rows = rows[_matches(rows[key], value)]
    return rows


TIME_MS = (1e-6, 1e9)  # a step's time a summary may hold (a nanosecond to 11 days)


def read_times(frame, contender, compute_mode, csv):
    """A contender's time (its row's median) and its compute-only time (NaN without one) in one run's summary."""
    rows = select(frame, contender.mode, contender.selector)
    if len(rows) != 1:
        modes = ", ".join(dict.fromkeys(frame["mode"]))
        raise ContenderFailed(f"contender '{contender.name}': {csv} has {len(rows)} rows of its selection "
                              f"({contender.describe()}; '{contender.mode}' rows are read; modes there: {modes}); "
                              f"one is needed: name the row with NAME:MODE= or select it with @PROCESS[KEY=VALUE]", 3)
    value = float(rows["time_ms_p50"].iloc[0])
    if not ob_tool.is_number(value, *TIME_MS):  # a ratio of times outside it overflows to inf and nan
        raise ContenderFailed(f"contender '{contender.name}': {csv}: time_ms_p50 {value} is not a time in "
                              f"[{TIME_MS[0]:g}, {TIME_MS[1]:g}] ms", 3)
    if contender.mode == compute_mode:
        return value, value
    partner = select(frame, compute_mode, contender.selector, ignore_empty=True)
    compute = float(partner["time_ms_p50"].iloc[0]) if len(partner) == 1 else math.nan
    return value, compute if math.isfinite(compute) and compute > 0 else math.nan


def next_round_fits(elapsed, round_seconds, deadline):
    """Whether another round, as long as the longest so far, ends before `deadline` (the first always starts)."""
    return deadline is None or not round_seconds or elapsed + max(round_seconds) <= deadline


def run_rounds(args, orders, runs_dir):
    """Every round's processes in its order, while they fit the deadline. Returns the rounds table (round, position,
    process, contender, mode, time_ms, compute_ms, wall_s, seed) of the complete rounds and why it stopped early."""
    by_process = {}
    for contender in args.contenders_parsed:
        by_process.setdefault(contender.process, []).append(contender)
    records, total, done, round_seconds = [], sum(len(o) for o in orders), 0, []
    start = time.monotonic()
    for round_index, order in enumerate(orders):
        elapsed = time.monotonic() - start
        if not next_round_fits(elapsed, round_seconds, args.deadline):
            return pd.DataFrame(records), (f"--deadline {args.deadline:g} s: round {round_index + 1} not started, "
                                           f"{args.deadline - elapsed:.0f} s left and the longest round took "
                                           f"{max(round_seconds):.0f} s")
        this_round, seed = [], compare_stats.round_seed(args.seed, round_index)
        for position, process in enumerate(order):
            csv = runs_dir / f"r{round_index}-{process}.csv"
            left = None if args.deadline is None else args.deadline - (time.monotonic() - start)
            try:
                seconds = compare_runs.run_one(args.processes[process], csv, args.timeout,
                                               runs_dir / f"r{round_index}-{process}.log", left, seed)
                try:
                    frame = ob_csv.load_summary(csv)
                except ob_tool.UsageError as error:
                    raise ContenderFailed(f"its summary is not one: {error}", 3) from None
                for contender in by_process[process]:
                    value, compute = read_times(frame, contender, args.compute_mode, csv)
                    this_round.append({"round": round_index, "position": position, "process": process,
                                       "contender": contender.name, "mode": contender.mode, "time_ms": value,
                                       "compute_ms": compute, "wall_s": seconds, "seed": seed})
            except PastDeadline:
                for path in runs_dir.glob(f"r{round_index}-*"):
                    path.unlink()
                return pd.DataFrame(records), (f"--deadline {args.deadline:g} s: round {round_index + 1} cut at its "
                                               f"run {position + 1} ({process}) and dropped")
            except ContenderFailed as failure:
                who = ", ".join(f"'{c.name}'" for c in by_process[process][:3])
                raise ContenderFailed(f"contender {who}{' ...' if len(by_process[process]) > 3 else ''}, round "
                                      f"{round_index + 1}: {failure}", failure.code) from None
            done += 1
            compare_runs.progress(f"round {round_index + 1}/{len(orders)}, run {done}/{total}: {process} "
                                  f"({len(by_process[process])} contender(s)) {seconds:.1f} s")
        records += this_round
        round_seconds.append(time.monotonic() - start - elapsed)
    return pd.DataFrame(records), None


def summarize(rounds, contenders, resolved, seed):
    """compare.csv: per contender and baseline of its group, the medians, spread, ratio, interval and verdict, and
    the ratio's compute-only and overhead factors with theirs."""
    ordered = rounds.sort_values("round")
    steps = {c.name: ordered[ordered["contender"] == c.name]["time_ms"].tolist() for c in contenders}
    computes = {c.name: ordered[ordered["contender"] == c.name]["compute_ms"].tolist() for c in contenders}
    rows = []
    for contender in contenders:
        name = contender.name
        lo, hi, rel = compare_stats.median_interval(steps[name], seed)
        own = np.asarray(steps[name]) / np.asarray(computes[name])
        has_compute = bool(np.all(np.isfinite(own)))
        own_lo, own_hi, _ = compare_stats.median_interval(own, seed) if has_compute else (math.nan,) * 3
        base = {"contender": name, "label": contender.label, "group": contender.group, "process": contender.process,
                "mode": contender.mode, "rounds": len(steps[name]), "median_ms": float(np.median(steps[name])),
                "median_ci_lo": lo, "median_ci_hi": hi, "round_min_ms": min(steps[name]),
                "round_max_ms": max(steps[name]), "median_ci_rel": rel, "unstable": int(rel > UNSTABLE_REL),
                "compute_ms": float(np.median(computes[name])) if has_compute else math.nan,
                "overhead": float(np.median(own)) if has_compute else math.nan, "overhead_ci_lo": own_lo,
                "overhead_ci_hi": own_hi, "beats_compute": int(has_compute and own_hi < 1)}
        for spec, group, members in resolved:
            if group != contender.group:
                continue
            split = compare_stats.factor_ratios(steps, computes, name, members, seed)
            row = dict(base, baseline=",".join(members), baseline_spec=spec, baseline_pick=split.pop("pick"), **split)
            row["verdict"] = "baseline" if name == row["baseline_pick"] else \
                verdict(row["ratio_ci_lo"], row["ratio_ci_hi"])
            row["carried_by"] = compare_stats.carrier(row) if row["verdict"] not in ("baseline", "not resolved") else ""
            rows.append(row)
    return pd.DataFrame(rows)


def also_summarize(args, rounds, runs_dir, mode):
    """compare.MODE.csv: `mode`'s row of each contender's selection in the same runs, for the contenders whose
    every run holds it, against the baselines' members that hold it; None when fewer than two hold it."""
    records, holding = [], []
    for contender in args.contenders_parsed:
        other = contender._replace(mode=mode)
        times = []
        for round_index in sorted(rounds["round"].unique()):
            frame = ob_csv.load_summary(runs_dir / f"r{round_index}-{contender.process}.csv")
            row = select(frame, mode, contender.selector, ignore_empty=True)
            if len(row) != 1:
                break
            times.append({"round": round_index, "contender": contender.name,
                          "time_ms": float(row["time_ms_p50"].iloc[0]), "compute_ms": math.nan})
        else:
            records += times
            holding.append(other)
    names = {c.name for c in holding}
    resolved = [(spec, group, [m for m in members if m in names]) for spec, group, members in args.resolved]
    resolved = [entry for entry in resolved if entry[2]]
    if len(holding) < 2 or not resolved:
        return None
    return summarize(pd.DataFrame(records), holding, resolved, args.seed)


def figure(table, path):
    """The ratios with their intervals: a panel per baseline as given, a row per contender."""
    import matplotlib.pyplot as plt

    shown = table[table["verdict"] != "baseline"]
    specs = list(dict.fromkeys(shown["baseline_spec"]))
    heights = [max(1.2, 0.25 * (shown["baseline_spec"] == s).sum() + 0.8) for s in specs]
    fig, axes = plt.subplots(len(specs), 1, figsize=(7.5, sum(heights) + 0.3), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for axis, spec in zip(axes[:, 0], specs):
        part = shown[shown["baseline_spec"] == spec]
        y = np.arange(len(part))
        colours = [{"faster": "#2ca02c", "slower": "#d62728"}.get(v, "#7f7f7f") for v in part["verdict"]]
        axis.errorbar(part["ratio"], y, xerr=[part["ratio"] - part["ratio_ci_lo"], part["ratio_ci_hi"] - part["ratio"]],
                      fmt="none", ecolor="black", capsize=2)
        axis.scatter(part["ratio"], y, c=colours, zorder=3, s=14)
        axis.axvline(1.0, color="#999999", linestyle="--")
        axis.set_yticks(y, part["contender"], fontsize=7 if len(part) > 20 else 9)
        axis.set_ylim(len(part) - 0.5, -0.5)
        axis.set_xlabel(f"time / time of {spec} (95 % interval over rounds)")
    figures.save_figure(fig, path)


def metadata(args, orders, runs_dir, rounds_run, stopped):
    meta = {"suite": "overlap-bench", "tool": "ob-compare", "commit": ob_tool.commit_id(), "host": socket.gethostname(),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command_line": sys.argv,
            "cwd": os.getcwd(), "python": platform.python_version(), "cpus": os.cpu_count(), "seed": args.seed,
            "round_seeds": [compare_stats.round_seed(args.seed, r) for r in range(rounds_run)],
            "rounds": rounds_run, "rounds_planned": args.rounds, "deadline_s": args.deadline, "stopped": stopped,
            "resamples": RESAMPLES, "unstable_rel": UNSTABLE_REL, "baselines": args.baseline,
            "compute_mode": args.compute_mode,
            "processes": [{"name": n, "command": c} for n, c in args.processes.items()],
            "contenders": [{"name": c.name, "process": c.process, "mode": c.mode, "selector": dict(c.selector),
                            **({"command": args.processes[c.process]} if not c.selector else {})}
                           for c in args.contenders_parsed],
            "orders": orders}
    first = ob_csv.read_metadata(runs_dir / f"r0-{orders[0][0]}.csv")
    for key in ("gpus", "cpu_model", "hardware", "hosts", "ranks"):
        if key in first:
            meta[key] = first[key]
    return meta


def main(argv=None):
    args = parse_args(argv)
    staging = Staging(args.out)
    try:
        return compare(args, staging)
    finally:
        staging.discard()


def compare(args, staging):
    orders = schedule(list(args.processes), args.rounds, args.seed)
    compare_runs.progress(f"{len(args.contenders_parsed)} contenders from {len(args.processes)} process(es) x "
                          f"{args.rounds} rounds, seed {args.seed}, writing {args.out}")
    try:
        rounds, stopped = run_rounds(args, orders, staging.runs)
    except ContenderFailed as failure:
        kept = staging.keep_runs()  # the logs the message names outlive the staging folder
        print(f"ob-compare: {str(failure).replace(str(staging.runs), str(kept))}", file=sys.stderr)
        return failure.code
    rounds_run = rounds["round"].nunique() if len(rounds) else 0
    if stopped:
        compare_runs.progress(f"stopped after {rounds_run} of {args.rounds} rounds: {stopped}")
    if rounds_run < 2:
        print(f"ob-compare: {stopped}: {rounds_run} complete round(s), at least 2 are needed to compare",
              file=sys.stderr)
        return 3
    table = summarize(rounds, args.contenders_parsed, args.resolved, args.seed)
    also = {mode: also_summarize(args, rounds, staging.runs, mode) for mode in args.also_mode}
    ob_tool.write_text_atomic(staging.path / "compare.rounds.csv", rounds.to_csv(index=False))
    ob_tool.write_text_atomic(staging.path / "compare.meta.json",
                             json.dumps(metadata(args, orders, staging.runs, rounds_run, stopped), indent=2) + "\n")
    figure(table, staging.path / "compare.png")
    for mode, extra in also.items():
        if extra is None:
            print(f"ob-compare: --also-mode {mode}: fewer than two contenders (or no baseline) hold that row",
                  file=sys.stderr)
            continue
        ob_tool.write_text_atomic(staging.path / f"compare.{mode}.csv", extra.to_csv(index=False))
    ob_tool.write_text_atomic(staging.path / "compare.csv", table.to_csv(index=False))
    staging.commit()
    for _, row in table.iterrows():
        if row["verdict"] != "baseline":
            print(sentence(row))
    for _, row in table.drop_duplicates("contender").iterrows():
        if row["beats_compute"]:
            print(f"note: {row['contender']}'s step is faster than its own compute-only step beyond the interval "
                  f"(step / compute-only {row['overhead']:.3f}x [{row['overhead_ci_lo']:.3f}, "
                  f"{row['overhead_ci_hi']:.3f}]): a broken baseline, its factor split is not a result")
    for mode, extra in also.items():
        for _, row in (extra.iterrows() if extra is not None else []):
            if row["verdict"] != "baseline":
                print(f"[{mode}] {sentence(row)}")
    return 0


def cli():
    """The console command ob-compare (pyproject.toml) and `python3 compare.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
