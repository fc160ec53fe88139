#!/usr/bin/env python3
"""ob-compare: contenders run as fresh processes in R rounds in one allocation, their order shuffled each round from a
recorded seed; each contender's figure is the median time of one mode of the summary CSV it writes, read every round;
for each ratio to a baseline a 95 % interval by bootstrap over rounds, and a verdict: faster, slower or not resolved.

A contender is NAME=COMMAND (or NAME:MODE=COMMAND to read another row than --mode), COMMAND any shell command line
that writes overlap-bench's summary CSV to the path it is given as {csv}: a phase binary (under mpirun where it
needs one), bench_ddp.py under torchrun, or any other program that writes those columns. A baseline is a contender's
name, or several joined by commas: the fastest of them by the median over rounds, chosen again inside every bootstrap
resample so that the interval carries the choice ("DDP at its best cap"). Resampling is paired (whole rounds), so a
drift that slows every contender of a round cancels in the ratio.

--also-mode MODE summarises another row of the same runs the same way into compare.MODE.csv (the contenders whose
summaries hold that row; baselines without it are left out): "the compute-only steps of the runs compared above",
from the same processes, not from another allocation.

Writes into --out: compare.csv (per contender and baseline: median over rounds, spread, ratio, interval, verdict),
compare.rounds.csv (every run: round, position, contender, time), compare.meta.json (commit, host, date, command,
seed, the contenders' commands and the first run's hardware), compare.png (the ratios with their intervals) and the
contenders' own outputs under runs/. Exit codes: 0; 1 when a contender's check failed (exit 1); 2 for bad usage
(nothing run); 3 when a contender failed otherwise; 77 when a contender was skipped (its hardware is absent).

--deadline SECONDS fits the comparison into an allocation's time: a round starts only while the longest round so far
still fits before it, a run it cuts drops that round whole (its files removed), and the complete rounds, at least two,
are summarised; compare.meta.json records the rounds planned and run and why it stopped. Each run runs in its own
session, and a run past --timeout or the deadline, or a signal to ob-compare, ends its whole process group (mpirun or
torchrun and their ranks), not only its shell.

Usage:
  ob-compare --out results/runs/cmp --rounds 5 --baseline ddp \\
    --contender "nccl=mpirun -np 2 build/gpu/phase4_chunked_nccl/phase4_chunked_nccl --sync nccl --csv {csv}" \\
    --contender "ddp=torchrun --nproc_per_node=2 scripts/bench_ddp.py --bucket-mb 25 --csv {csv}"
"""
import json
import math
import os
import pathlib
import platform
import random
import re
import shlex
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pandas as pd

import ob_csv

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
UNSTABLE_REL = 0.05  # a contender whose median over rounds has a 95 % interval wider than +-5 % is unstable
RESAMPLES = 2000


def parse_contender(text, default_mode):
    """'name[:mode]=command' -> (name, mode, command); a usage error naming what is wrong."""
    head, sep, command = text.partition("=")
    name, _, mode = head.partition(":")
    name, mode, command = name.strip(), (mode.strip() or default_mode), command.strip()
    if not sep or not command:
        raise ob_csv.UsageError(f"--contender: '{text}' is invalid: NAME=COMMAND (or NAME:MODE=COMMAND)")
    if not NAME.match(name):
        raise ob_csv.UsageError(f"--contender: '{name}' is invalid: a name of letters, digits and _ . + -")
    if "{csv}" not in command:
        raise ob_csv.UsageError(f"--contender: '{name}': its command must write its summary to {{csv}}")
    return name, mode, command


def read_contenders_file(path):
    """Contenders one per line (NAME=COMMAND); blank lines and lines starting with # are skipped."""
    try:
        lines = pathlib.Path(path).read_text().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ob_csv.UsageError(f"--contenders: '{path}' cannot be read ({error})") from None
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def parse_args(argv=None):
    parser = ob_csv.ArgumentParser(description=ob_csv.describe(__doc__))
    parser.add_argument("--contender", action="append", default=[], metavar="NAME[:MODE]=COMMAND",
                        help="a contender; its command writes a summary CSV to {csv} (repeatable)")
    parser.add_argument("--contenders", metavar="FILE", help="more contenders, one NAME=COMMAND per line")
    parser.add_argument("--baseline", action="append", default=[], metavar="NAME[,NAME...]",
                        help="the contender(s) every ratio divides by; several joined by commas: the fastest of "
                             "them (repeatable; default: the first contender)")
    parser.add_argument("--mode", default="overlap", help="the summary row read from each CSV (default: overlap)")
    parser.add_argument("--also-mode", action="append", default=[], metavar="MODE",
                        help="also summarise this row of the same runs into compare.MODE.csv (repeatable)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; each runs every contender once (default: 5)")
    parser.add_argument("--seed", type=int, help="seed of the order and of the bootstrap (default: drawn, recorded)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds one run may take (default: 3600)")
    parser.add_argument("--deadline", type=float, metavar="SECONDS",
                        help="seconds the whole comparison may take: rounds that would not fit are not started, a "
                             "round cut by it is dropped, the complete rounds (at least 2) are summarised")
    parser.add_argument("--out", required=True, help="folder to write (created; must not hold a comparison yet)")
    args = parser.parse_args(argv)
    try:
        texts = args.contender + (read_contenders_file(args.contenders) if args.contenders else [])
        args.contenders_parsed = [parse_contender(text, args.mode) for text in texts]
    except ob_csv.UsageError as error:
        parser.error(str(error))
    names = [name for name, _, _ in args.contenders_parsed]
    if len(names) < 2:
        parser.error("--contender: at least two contenders are needed to compare")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        parser.error(f"--contender: '{duplicates[0]}' is named twice")
    args.baseline = args.baseline or [names[0]]
    for group in args.baseline:
        for member in group.split(","):
            if member not in names:
                parser.error(f"--baseline: '{member}' is invalid: not a contender ({', '.join(names)})")
    if not 2 <= args.rounds <= 1000:
        parser.error(f"--rounds: '{args.rounds}' is invalid: 2 to 1000")
    if args.seed is not None and not 0 <= args.seed < 2 ** 32:
        parser.error(f"--seed: '{args.seed}' is invalid: 0 to 2^32-1")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        parser.error(f"--timeout: '{args.timeout}' is invalid: seconds > 0")
    if args.deadline is not None and not (math.isfinite(args.deadline) and args.deadline > 0):
        parser.error(f"--deadline: '{args.deadline}' is invalid: seconds > 0")
    out = pathlib.Path(args.out)
    if out.exists() and not out.is_dir():
        parser.error(f"--out: '{args.out}' is invalid: not a folder")
    for mode in args.also_mode:
        if not NAME.match(mode) or mode == args.mode:
            parser.error(f"--also-mode: '{mode}' is invalid: a row's mode other than --mode ({args.mode})")
    try:
        ob_csv.require_outputs([(f"--out ({name})", out / name) for name in
                                ("compare.csv", "compare.rounds.csv", "compare.meta.json", "compare.png",
                                 *(f"compare.{mode}.csv" for mode in args.also_mode))])
    except ob_csv.UsageError as error:
        parser.error(str(error))
    if (out / "compare.csv").exists():
        parser.error(f"--out: '{args.out}' is invalid: it already holds a comparison (compare.csv)")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2 ** 32)
    return args


def schedule(names, rounds, seed):
    """The order of every round: the contenders shuffled anew each round by one generator seeded with `seed`."""
    generator = random.Random(seed)
    orders = []
    for _ in range(rounds):
        order = list(names)
        generator.shuffle(order)
        orders.append(order)
    return orders


def read_time(csv, mode, name):
    """The p50 time of the one `mode` row of a contender's summary."""
    frame = ob_csv.load_summary(csv)
    rows = frame[frame["mode"] == mode]
    if len(rows) != 1:
        raise ob_csv.UsageError(f"contender '{name}': {csv} has {len(rows)} '{mode}' rows, one is needed "
                                f"(modes there: {', '.join(dict.fromkeys(frame['mode']))}); name the row with "
                                f"NAME:MODE= or make one contender per setting")
    return float(rows["time_ms_p50"].iloc[0])


class ContenderFailed(Exception):
    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


class PastDeadline(Exception):
    """A run the deadline cut: its round is dropped."""


_RUNNING = []  # the run in progress, whose process group a signal to ob-compare ends (ob_csv.at_signal)


def end_group(process, grace=10.0):
    """Ends a run's whole session (its shell, mpirun or torchrun, their ranks): SIGTERM, then SIGKILL after `grace`."""
    for number, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, number)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue


def end_running():
    for process in _RUNNING:
        end_group(process, grace=2.0)


def run_one(command, csv, timeout, log, deadline_left=None):
    """Runs a contender's command (bash -c, {csv} replaced) as a fresh process in its own session; its output goes to
    `log`. Past `timeout` (or `deadline_left`, when that is sooner: PastDeadline) its process group is ended."""
    line = command.replace("{csv}", shlex.quote(str(csv)))
    cut_by_deadline = deadline_left is not None and deadline_left < timeout
    limit = deadline_left if cut_by_deadline else timeout
    start = time.monotonic()
    with open(log, "w") as sink:
        process = subprocess.Popen(["bash", "-c", line], stdout=sink, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        _RUNNING.append(process)
        try:
            returncode = process.wait(timeout=max(limit, 0.0))
        except subprocess.TimeoutExpired:
            end_group(process)
            if cut_by_deadline:
                raise PastDeadline() from None
            raise ContenderFailed(f"ran past --timeout {timeout:g} s (log: {log})", 3) from None
        finally:
            _RUNNING.remove(process)
    if returncode != 0:
        tail = " | ".join(pathlib.Path(log).read_text(errors="replace").strip().splitlines()[-3:])
        code = {1: 1, 77: 77}.get(returncode, 3)
        raise ContenderFailed(f"exit {returncode}: {tail} (log: {log})", code)
    if not pathlib.Path(csv).is_file():
        raise ContenderFailed(f"exit 0 but wrote no summary at {csv} (log: {log})", 3)
    return time.monotonic() - start


def next_round_fits(elapsed, round_seconds, deadline):
    """Whether another round, as long as the longest so far, ends before `deadline` (the first always starts)."""
    return deadline is None or not round_seconds or elapsed + max(round_seconds) <= deadline


def run_rounds(contenders, orders, runs_dir, timeout, deadline=None, progress=sys.stderr):
    """Every round's runs in its order, while they fit `deadline` (seconds from now, or None). Returns the rounds
    table (round, position, contender, mode, time_ms) of the complete rounds and why it stopped early (None)."""
    by_name = {name: (mode, command) for name, mode, command in contenders}
    records, total, done, round_seconds = [], sum(len(o) for o in orders), 0, []
    start = time.monotonic()
    for round_index, order in enumerate(orders):
        elapsed = time.monotonic() - start
        if not next_round_fits(elapsed, round_seconds, deadline):
            return pd.DataFrame(records), (f"--deadline {deadline:g} s: round {round_index + 1} not started, "
                                           f"{deadline - elapsed:.0f} s left and the longest round took "
                                           f"{max(round_seconds):.0f} s")
        this_round = []
        for position, name in enumerate(order):
            mode, command = by_name[name]
            csv = runs_dir / f"r{round_index}-{name}.csv"
            left = None if deadline is None else deadline - (time.monotonic() - start)
            try:
                seconds = run_one(command, csv, timeout, runs_dir / f"r{round_index}-{name}.log", left)
                value = read_time(csv, mode, name)
            except PastDeadline:
                for path in runs_dir.glob(f"r{round_index}-*"):
                    path.unlink()
                return pd.DataFrame(records), (f"--deadline {deadline:g} s: round {round_index + 1} cut at its "
                                               f"run {position + 1} ({name}) and dropped")
            except ContenderFailed as failure:
                raise ContenderFailed(f"contender '{name}', round {round_index + 1}: {failure}", failure.code) from None
            done += 1
            this_round.append({"round": round_index, "position": position, "contender": name, "mode": mode,
                               "time_ms": value, "wall_s": seconds})
            print(f"[ob-compare] round {round_index + 1}/{len(orders)}, run {done}/{total}: {name} {mode} "
                  f"{value:.4g} ms ({seconds:.1f} s)", file=progress, flush=True)
        records += this_round
        round_seconds.append(time.monotonic() - start - elapsed)
    return pd.DataFrame(records), None


def bootstrap_ratios(times, contender, group, seed, resamples=RESAMPLES):
    """Ratio of `contender`'s median over rounds to the fastest of `group`'s, and its 95 % percentile interval over
    paired round resamples (the fastest chosen again in each). `times`: contender -> per-round times (same rounds).
    Returns (ratio, lo, hi, the group member that was fastest)."""
    matrix = {name: np.asarray(times[name], dtype=float) for name in {contender, *group}}
    medians = {name: float(np.median(v)) for name, v in matrix.items()}
    pick = min(group, key=lambda name: medians[name])
    ratio = medians[contender] / medians[pick]
    rounds = len(matrix[contender])
    generator = np.random.default_rng(seed)
    indices = generator.integers(0, rounds, size=(resamples, rounds))
    numerator = np.median(matrix[contender][indices], axis=1)
    denominator = np.min(np.stack([np.median(matrix[name][indices], axis=1) for name in group]), axis=0)
    lo, hi = np.percentile(numerator / denominator, [2.5, 97.5])
    return ratio, float(lo), float(hi), pick


def verdict(lo, hi):
    if hi < 1.0:
        return "faster"
    if lo > 1.0:
        return "slower"
    return "not resolved"


def median_interval(values, seed, resamples=RESAMPLES):
    """95 % bootstrap interval of the median of `values`, relative half-width."""
    values = np.asarray(values, dtype=float)
    generator = np.random.default_rng(seed)
    medians = np.median(values[generator.integers(0, len(values), size=(resamples, len(values)))], axis=1)
    lo, hi = np.percentile(medians, [2.5, 97.5])
    return float(lo), float(hi), float((hi - lo) / 2 / np.median(values))


def summarize(rounds, contenders, baselines, seed):
    """compare.csv: per contender and baseline group, the medians, spread, ratio, interval and verdict."""
    times = {name: rounds[rounds["contender"] == name].sort_values("round")["time_ms"].tolist()
             for name, _, _ in contenders}
    rows = []
    for name, mode, _ in contenders:
        lo, hi, rel = median_interval(times[name], seed)
        for group_text in baselines:
            group = group_text.split(",")
            ratio, ratio_lo, ratio_hi, pick = bootstrap_ratios(times, name, group, seed)
            same = name == pick  # the baseline itself (or the member of a group that was fastest)
            rows.append({"contender": name, "mode": mode, "rounds": len(times[name]),
                         "median_ms": float(np.median(times[name])), "median_ci_lo": lo, "median_ci_hi": hi,
                         "round_min_ms": min(times[name]), "round_max_ms": max(times[name]), "median_ci_rel": rel,
                         "unstable": int(rel > UNSTABLE_REL), "baseline": group_text, "baseline_pick": pick,
                         "ratio": ratio, "ratio_ci_lo": ratio_lo, "ratio_ci_hi": ratio_hi,
                         "verdict": "baseline" if same else verdict(ratio_lo, ratio_hi)})
    return pd.DataFrame(rows)


def also_summarize(rounds, contenders, baselines, runs_dir, mode, seed):
    """compare.MODE.csv: `mode`'s row read from the same runs, for the contenders whose every run holds it, against
    the baselines (their members that hold it); None when fewer than two contenders hold it."""
    records, holding = [], []
    for name, _, command in contenders:
        times = []
        for round_index in sorted(rounds["round"].unique()):
            frame = ob_csv.load_summary(runs_dir / f"r{round_index}-{name}.csv")
            row = frame[frame["mode"] == mode]
            if len(row) != 1:
                break
            times.append({"round": round_index, "contender": name, "time_ms": float(row["time_ms_p50"].iloc[0])})
        else:
            records += times
            holding.append((name, mode, command))
    kept = [",".join(m for m in group.split(",") if m in {n for n, _, _ in holding}) for group in baselines]
    kept = [group for group in dict.fromkeys(kept) if group]
    if len(holding) < 2 or not kept:
        return None
    return summarize(pd.DataFrame(records), holding, kept, seed)


def sentence(row):
    """One line a person reads: 'nccl is faster than ddp: 0.83x [0.80, 0.86] over 5 rounds'."""
    against = row["baseline"] if row["baseline"] == row["baseline_pick"] else \
        f"the fastest of {row['baseline']} ({row['baseline_pick']})"
    words = {"faster": "faster than", "slower": "slower than", "not resolved": "not resolved against"}
    text = (f"{row['contender']} is {words[row['verdict']]} {against}: {row['ratio']:.3f}x "
            f"[{row['ratio_ci_lo']:.3f}, {row['ratio_ci_hi']:.3f}] over {row['rounds']} rounds")
    if row["unstable"]:
        text += f" (unstable: its median moves +-{100 * row['median_ci_rel']:.1f} % between rounds)"
    return text


def figure(table, path):
    import matplotlib.pyplot as plt

    shown = table[table["verdict"] != "baseline"]
    groups = list(dict.fromkeys(shown["baseline"]))
    fig, axes = plt.subplots(len(groups), 1, figsize=(7, 0.5 + 0.45 * len(shown) + 0.6 * len(groups)), squeeze=False)
    for axis, group in zip(axes[:, 0], groups):
        part = shown[shown["baseline"] == group]
        y = np.arange(len(part))
        colours = [{"faster": "#2ca02c", "slower": "#d62728"}.get(v, "#7f7f7f") for v in part["verdict"]]
        axis.errorbar(part["ratio"], y, xerr=[part["ratio"] - part["ratio_ci_lo"], part["ratio_ci_hi"] - part["ratio"]],
                      fmt="none", ecolor="black", capsize=3)
        axis.scatter(part["ratio"], y, c=colours, zorder=3)
        axis.axvline(1.0, color="#999999", linestyle="--")
        axis.set_yticks(y, part["contender"])
        axis.set_xlabel(f"time / time of {group} (95 % interval over rounds)")
    ob_csv.save_figure(fig, path)


def metadata(args, contenders, orders, runs_dir, rounds_run, stopped):
    meta = {"suite": "overlap-bench", "tool": "ob-compare", "commit": ob_csv.commit_id(), "host": socket.gethostname(),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command_line": sys.argv,
            "cwd": os.getcwd(), "python": platform.python_version(), "cpus": os.cpu_count(), "seed": args.seed,
            "rounds": rounds_run, "rounds_planned": args.rounds, "deadline_s": args.deadline, "stopped": stopped,
            "resamples": RESAMPLES, "unstable_rel": UNSTABLE_REL, "baselines": args.baseline,
            "contenders": [{"name": n, "mode": m, "command": c} for n, m, c in contenders], "orders": orders}
    first = ob_csv.read_metadata(runs_dir / f"r0-{contenders[0][0]}.csv")
    for key in ("gpus", "cpu_model", "hardware", "hosts", "ranks"):
        if key in first:
            meta[key] = first[key]
    return meta


def main(argv=None):
    args = parse_args(argv)
    out = pathlib.Path(args.out)
    runs_dir = out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    contenders = args.contenders_parsed
    orders = schedule([name for name, _, _ in contenders], args.rounds, args.seed)
    print(f"[ob-compare] {len(contenders)} contenders x {args.rounds} rounds, seed {args.seed}, writing {out}",
          file=sys.stderr, flush=True)
    ob_csv.at_signal(end_running)
    try:
        rounds, stopped = run_rounds(contenders, orders, runs_dir, args.timeout, args.deadline)
    except ContenderFailed as failure:
        print(f"ob-compare: {failure}", file=sys.stderr)
        return failure.code
    rounds_run = rounds["round"].nunique() if len(rounds) else 0
    if stopped:
        print(f"[ob-compare] stopped after {rounds_run} of {args.rounds} rounds: {stopped}", file=sys.stderr)
    if rounds_run < 2:
        print(f"ob-compare: {stopped}: {rounds_run} complete round(s), at least 2 are needed to compare",
              file=sys.stderr)
        return 3
    table = summarize(rounds, contenders, args.baseline, args.seed)
    also = {mode: also_summarize(rounds, contenders, args.baseline, runs_dir, mode, args.seed)
            for mode in args.also_mode}
    # The set is written whole or not at all: each file staged and renamed, compare.csv (the one readers look for)
    # last.
    ob_csv.write_text_atomic(out / "compare.rounds.csv", rounds.to_csv(index=False))
    ob_csv.write_text_atomic(out / "compare.meta.json",
                             json.dumps(metadata(args, contenders, orders, runs_dir, rounds_run, stopped),
                                        indent=2) + "\n")
    figure(table, out / "compare.png")
    for mode, extra in also.items():
        if extra is None:
            print(f"ob-compare: --also-mode {mode}: fewer than two contenders (or no baseline) hold that row",
                  file=sys.stderr)
            continue
        ob_csv.write_text_atomic(out / f"compare.{mode}.csv", extra.to_csv(index=False))
    ob_csv.write_text_atomic(out / "compare.csv", table.to_csv(index=False))
    for _, row in table.iterrows():
        if row["verdict"] != "baseline":
            print(sentence(row))
    for mode, extra in also.items():
        for _, row in (extra.iterrows() if extra is not None else []):
            if row["verdict"] != "baseline":
                print(f"[{mode}] {sentence(row)}")
    return 0


def cli():
    """The console command ob-compare (pyproject.toml) and `python3 compare.py`."""
    raise SystemExit(ob_csv.main_guard(main))


if __name__ == "__main__":
    cli()
