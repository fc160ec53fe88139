#!/usr/bin/env python3
"""ob-gate: the before/after gate of a change to GPU code. Phase 4 of a base commit and of the current tree, built
side by side, run per configuration x strategy in the same allocation, in rounds of fresh processes (ob-compare); a
row whose after/before ratio lies above --threshold with its whole interval (a regression beyond 2 % by default) is
named, and the command exits 1.

Each side runs one process per configuration and round (--mode overlap, every strategy in a --sweep, as every build
since round 3 can), so a base older than the current tree's options is measured the same way. --base COMMIT builds
that commit's phase 4 into build/gate-<commit> (git worktree; CMake preset gpu, or --preset); --base-build DIR takes
one built already (a device machine without the repository's history). Writes into --out: compare/ (ob-compare's
folder) and gate.csv (per configuration and strategy: the ratio, its interval, verdict and whether it regressed).

Usage:
  ob-gate --base b03258e --out results/runs/gate --gpus 2
  ob-gate --base-build /tmp/before/build/gpu --build build/gpu --out results/runs/gate --gpus 2
"""
import pathlib
import shlex
import subprocess
import sys


from overlap_bench.compare import compare
from overlap_bench.compare import headline
from overlap_bench.compare import headline_tables
from overlap_bench.core import mpi_launch
from overlap_bench.core import ob_tool
from overlap_bench.core import packs

BINARY = "phase4_chunked_nccl/phase4_chunked_nccl"
COMMAND = (mpi_launch.MPIRUN + " -np {gpus} {binary} --mode overlap --hidden {h} --layers {l} --batch {b} "
           "--sweep sync={syncs} --iters {iters} --csv {csv}")


def regressions(table, threshold):
    """gate.csv from ob-compare's table: every `after` contender against `before` in its group (strategy-config),
    regressed where the ratio's whole interval lies above `threshold`."""
    rows = table[(table["label"] == "after") & (table["baseline_pick"].str.startswith("before@"))].copy()
    rows["sync"] = rows["group"].str.rpartition("-")[0]
    rows["config"] = rows["group"].str.rpartition("-")[2]
    rows["after_ms"] = rows["median_ms"]
    rows["regressed"] = (rows["ratio_ci_lo"] > threshold).astype(int)
    return rows[["config", "sync", "after_ms", "ratio", "ratio_ci_lo", "ratio_ci_hi", "verdict", "regressed"]]


def build_base(commit, preset):
    """Builds `commit`'s phase 4 beside the tree (build/gate-<commit>/src, a git worktree); returns its build folder."""
    root = ob_tool.REPO / "build" / f"gate-{commit}"
    source = root / "src"
    if not source.is_dir():
        done = subprocess.run(["git", "-C", str(ob_tool.REPO), "worktree", "add", "--detach", str(source), commit],
                              capture_output=True, text=True)
        if done.returncode:
            raise ob_tool.UsageError(f"--base: '{commit}' is invalid: {done.stderr.strip().splitlines()[-1]}")
    for step in (["cmake", "--preset", preset], ["cmake", "--build", f"build/{preset}", "-j", "--target",
                                                   "phase4_chunked_nccl"]):
        done = subprocess.run(step, cwd=source, capture_output=True, text=True)
        if done.returncode:
            tail = " | ".join(done.stdout.strip().splitlines()[-3:])
            raise OSError(f"building {commit} failed ({' '.join(step)}): {tail}")
    return source / "build" / preset


def parse_args(argv=None):
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("--out", required=True, type=ob_tool.output_tree,
                        help="folder to write (created; must not hold a gate yet)")
    parser.add_argument("--base", type=ob_tool.any_text, help="the base commit, built beside the tree")
    parser.add_argument("--base-build", type=ob_tool.any_text, help="the base's build folder, built already")
    parser.add_argument("--build", type=ob_tool.any_text, help="this tree's build folder (default: build/gpu)")
    parser.add_argument("--preset", type=ob_tool.any_text, default="gpu",
                        help="CMake preset of --base's build (default: gpu)")
    parser.add_argument("--configs", type=ob_tool.listed(ob_tool.any_text, as_text=True),
                        default=",".join(headline.headline_configs()),
                        help="HxLxB,... (default: the headline's six, experiments/headline.toml)")
    parser.add_argument("--syncs", type=ob_tool.listed(ob_tool.any_text, as_text=True),
                        default=",".join(headline.headline_list("strategies")),
                        help="strategies (default: the headline's, carry included: experiments/headline.toml)")
    parser.add_argument("--gpus", type=ob_tool.whole(1, 1024), default=2, help="ranks, one per GPU (default: 2)")
    parser.add_argument("--iters", type=ob_tool.whole(1, 10000), default=20,
                        help="timed iterations per point (default: 20)")
    parser.add_argument("--rounds", type=ob_tool.whole(2, 1000), default=3, help="rounds (default: 3)")
    parser.add_argument("--threshold", type=ob_tool.number_in(1, 10), default=1.02,
                        help="a ratio whose interval lies above this is a regression (default: 1.02)")
    parser.add_argument("--seed", type=ob_tool.whole(0, 2 ** 32 - 1), help="ob-compare's seed")
    parser.add_argument("--deadline", type=ob_tool.number_in(1, 1e7),
                        help="seconds the rounds may take (ob-compare --deadline)")
    parser.add_argument("--command", type=ob_tool.any_text, default=COMMAND,
                        help="a side's process: {binary}, {h}, {l}, {b}, {syncs}, {gpus}, {iters}, {csv} (default: "
                             "phase 4 under mpirun)")
    args = parser.parse_args(argv)
    args.build = args.build or str(ob_tool.REPO / "build" / "gpu")
    configs = args.configs.split(",")
    problems = [("--base", args.base, bool(args.base) != bool(args.base_build), "one of --base and --base-build"),
                ("--configs", args.configs, all(headline_tables.shape(c) for c in configs)
                 and ob_tool.distinct(configs), "HxLxB,..., each once"),
                ("--syncs", args.syncs, all(compare.PROCESS_NAME.match(s) for s in args.syncs.split(","))
                 and ob_tool.distinct(args.syncs.split(",")), "strategy names, comma-separated, each once"),
                ("--gpus", args.gpus, 1 <= args.gpus <= 1024, "1 to 1024"),
                ("--iters", args.iters, 1 <= args.iters <= 10000, "1 to 10000"),
                ("--threshold", args.threshold, 1.0 <= args.threshold <= 10.0, "1 to 10"),
                ("--command", args.command, "{csv}" in args.command and "{binary}" in args.command,
                 "a command with {binary} and {csv}")]
    for option, value, ok, allowed in problems:
        if not ok:
            parser.error(f"{option}: '{value}' is invalid: {allowed}")
    try:  # every placeholder known, every brace paired: the command is made before anything runs
        side_command(args, "build", "1x1x1")
    except (KeyError, IndexError, ValueError) as error:
        parser.error(f"--command: '{args.command}' is invalid: {type(error).__name__} {error} (placeholders: "
                     "{binary}, {h}, {l}, {b}, {syncs}, {gpus}, {iters}, {csv}; a literal brace doubled)")
    for option, build in (("--base-build", args.base_build), ("--build", args.build)):
        if build and args.command == COMMAND and not (pathlib.Path(build) / BINARY).is_file():
            parser.error(f"{option}: '{build}' is invalid: no {BINARY} in it (build it first)")
    if (pathlib.Path(args.out) / "gate.csv").exists() or (pathlib.Path(args.out) / "compare").exists():
        parser.error(f"--out: '{args.out}' is invalid: it already holds a gate")
    return args


def side_command(args, build, config):
    """A side's process for one configuration: --command with its placeholders filled, the binary's path quoted
    for the shell that runs it (a folder with a space or a `;` in its name stays one word)."""
    h, l, b = headline_tables.shape(config)
    return args.command.format(binary=shlex.quote(str(pathlib.Path(build) / BINARY)), h=h, l=l, b=b,
                               syncs=args.syncs, gpus=args.gpus, iters=args.iters, csv="{csv}")


def compare_args(args, builds):
    """ob-compare's arguments: per side and configuration a process, per strategy a contender side@sync-config."""
    argv = []
    for side, build in builds.items():
        for config in args.configs.split(","):
            command = side_command(args, build, config)
            argv += ["--process", f"{side}-{config}={command}"]
            argv += [a for sync in args.syncs.split(",")
                     for a in ("--contender", f"{side}@{sync}-{config}=@{side}-{config}[sync={sync}]")]
    argv += ["--baseline", "before", "--rounds", str(args.rounds), "--out", str(pathlib.Path(args.out) / "compare")]
    argv += ["--deadline", f"{args.deadline:g}"] if args.deadline else []
    return argv + (["--seed", str(args.seed)] if args.seed is not None else [])


def main(argv=None):
    args = parse_args(argv)
    base = args.base_build or build_base(args.base, args.preset)
    code = compare.main(compare_args(args, {"before": base, "after": args.build}))
    if code != 0:  # a run that failed (a check, a crash, a time-out) is no regression: exit 3, 1 is kept for those
        print(f"ob-gate: a run failed (ob-compare exit {code}): no verdict on regressions", file=sys.stderr)
        return 2 if code == 2 else 3
    out = pathlib.Path(args.out)
    gate = regressions(packs.read_csv(out / "compare" / "compare.csv", "ob-compare's table"), args.threshold)
    ob_tool.write_text_atomic(out / "gate.csv", gate.to_csv(index=False))
    regressed = gate[gate["regressed"] == 1]
    for _, row in regressed.iterrows():
        print(f"regression: {row['sync']} on {row['config']}: {row['ratio']:.3f}x [{row['ratio_ci_lo']:.3f}, "
              f"{row['ratio_ci_hi']:.3f}] of the base, above {args.threshold:g}", file=sys.stderr)
    print(f"ob-gate: {len(regressed)} of {len(gate)} rows regressed beyond {args.threshold:g} "
          f"(after / before, 95 % interval over {args.rounds} rounds)")
    return 1 if len(regressed) else 0


def cli():
    """The console command ob-gate (pyproject.toml) and `python3 gate.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
