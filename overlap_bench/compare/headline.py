#!/usr/bin/env python3
"""ob-headline: the suite's headline comparison in one call: phase 4's strategies and its planner's plan against
PyTorch DDP at several bucket caps and FSDP2, on the configurations of an experiment file
(experiments/headline.toml), in rounds of fresh processes in one allocation, every ratio split into its compute-only
and overhead factors (METRICS.md, "The headline").

First the planner is calibrated once per configuration (one phase 4 process each, reused by every round). Then
ob-compare runs three processes a round, their order shuffled: one phase 4 process running every strategy x
configuration and the planned plan (its points shuffled by the round's seed), one bench_ddp.py process every cap x
configuration, one FSDP2 process every configuration. Writes into --out: calibration/ (the calibrations and their
logs), compare/ (ob-compare's folder), headline.csv (a row per configuration: the fastest phase 4 contender against
DDP at its best cap with its interval, verdict and factors, the planned plan against the fastest strategy, FSDP2
against DDP, the step against its floor, and the definition checks), headline.contenders.csv (every contender
against DDP's best), headline.meta.json and headline.png. --analyze DIR remakes the tables and figure from a
finished call's compare/ folder without running anything.

Usage:
  ob-headline --out results/runs/headline --gpus 2 --build build/gpu
  ob-headline --analyze results/2xH100/headline --out results/2xH100/headline
"""
import io
import pathlib
import shlex
import subprocess
import sys
import time

from overlap_bench.planner import check_prediction
from overlap_bench.compare import compare
from overlap_bench.compare import compare_runs
from overlap_bench.compare import headline_tables
from overlap_bench.core import experiment_lists
from overlap_bench.core import mpi_launch
from overlap_bench.core import ob_tool
from overlap_bench.core import packs
from overlap_bench.core import validate

MPI = mpi_launch.MPIRUN  # multicast kept off, said once
# The checkout's experiment and the lists it declares once (configs, strategies, planned_syncs): core's, which every
# room reads (the figures' strategy colours, run_all.sh's --plan-syncs, ob-gate's defaults, bench_parts' loops).
EXPERIMENT = experiment_lists.EXPERIMENT
headline_list = experiment_lists.headline_list


def headline_configs(path=EXPERIMENT):
    """The six configurations (HxLxB): headline_list("configs")."""
    return headline_list("configs", path)


def load_experiment(path):
    """The experiment file, every key checked (a usage error naming the file and the key); without `configs`, the
    headline's beside it."""
    spec = ob_tool.load_toml(path, "--experiment")
    spec.setdefault("configs", headline_configs(pathlib.Path(path).with_name(EXPERIMENT.name)))
    kinds = {"name": str, "rounds": int, "iters": int, "configs": list, "strategies": list, "planned_syncs": list,
             "ddp_caps_mb": list, "fsdp2": bool, "baseline": str}
    unknown = sorted(set(spec) - set(kinds) - {"caps_mb", "min_time_ms", "passes", "graph", "ddp_graph"})
    if unknown:
        raise ob_tool.UsageError(f"--experiment: '{path}' is invalid: unknown key '{unknown[0]}' (a misspelt key "
                                 "would be ignored)")
    for key, kind in kinds.items():
        if not isinstance(spec.get(key), kind) or isinstance(spec.get(key), bool) != (kind is bool):
            raise ob_tool.UsageError(f"--experiment: '{path}' is invalid: '{key}' must be a {kind.__name__}")
    # Phase 4's fixed plans: bucket caps (MiB, the first bucket 1 MiB); absent, its default of 25.
    spec.setdefault("caps_mb", [25])
    # Timed iterations beyond `iters` where a step is short (--min-time-ms of phase 4 and bench_ddp.py); absent, none.
    spec.setdefault("min_time_ms", 0)
    # Phase 4's modes, bench_ddp.py's steps and the calibration's runs (at most 3 passes: its --iters) in turn this
    # many times a point (--passes); absent, once.
    spec.setdefault("passes", 1)
    # Phase 4's steps and its calibration's captured in CUDA graphs and replayed (--graph); absent, eager.
    spec.setdefault("graph", False)
    # DDP's steps likewise (bench_ddp.py --graph; FSDP2's stay eager); absent, eager.
    spec.setdefault("ddp_graph", False)
    checks = [("rounds", 2 <= spec["rounds"] <= 100), ("iters", 1 <= spec["iters"] <= 10000),
              ("caps_mb", isinstance(spec["caps_mb"], list) and bool(spec["caps_mb"]) and
               all(ob_tool.is_number(c, 1e-6, 1e6) for c in spec["caps_mb"])
               and ob_tool.distinct(spec["caps_mb"])),
              ("configs", bool(spec["configs"]) and all(headline_tables.shape(c) for c in spec["configs"])),
              ("strategies", all(isinstance(s, str) and compare.PROCESS_NAME.match(s) for s in spec["strategies"])),
              ("planned_syncs", all(isinstance(s, str) and compare.PROCESS_NAME.match(s)
                                    for s in spec["planned_syncs"])),
              ("min_time_ms", ob_tool.is_number(spec["min_time_ms"], 0, 60000)),
              ("passes", ob_tool.is_number(spec["passes"], 1, spec["iters"], integer=True)),
              ("graph", isinstance(spec["graph"], bool)), ("ddp_graph", isinstance(spec["ddp_graph"], bool)),
              ("ddp_caps_mb", all(ob_tool.is_number(c, 1e-6, 1e6) for c in spec["ddp_caps_mb"])
               and ob_tool.distinct(spec["ddp_caps_mb"])),
              ("configs", ob_tool.distinct(spec["configs"]))]
    for key, ok in checks:
        if not ok:
            raise ob_tool.UsageError(f"--experiment: '{path}' is invalid: '{key}' holds a value out of range")
    labels = {cap_label(s, c, spec) for s in spec["strategies"] for c in spec["caps_mb"]} | \
        {f"ddp-{c:g}" for c in spec["ddp_caps_mb"]} | ({"planned"} if spec["planned_syncs"] else set()) | \
        ({"fsdp2"} if spec["fsdp2"] else set())
    named = spec["baseline"].split(",")
    if not named or any(n not in labels for n in named):
        raise ob_tool.UsageError(f"--experiment: '{path}' is invalid: 'baseline' must name contenders of the "
                                 f"experiment ({', '.join(sorted(labels))})")
    # and whatever the checks above leave to it: the declared schema (schemas/experiment.schema.json)
    return validate.check(spec, "experiment", f"--experiment: '{path}' is invalid")


def cap_label(sync, cap, spec):
    """A fixed plan's contender label: the strategy, and its cap where the experiment runs several."""
    return sync if len(spec["caps_mb"]) == 1 else f"{sync}-{cap:g}"


def plan(spec, gpus, build, out, python=sys.executable):
    """The calibrations (config, command, calibration file) and ob-compare's arguments of an experiment."""
    p4 = f"{MPI} -np {gpus} {shlex.quote(str(pathlib.Path(build) / 'phase4_chunked_nccl' / 'phase4_chunked_nccl'))}"
    syncs = ",".join(spec["planned_syncs"])
    calibrations = []
    cal_passes = f" --passes {min(spec['passes'], 3)}" if spec["passes"] > 1 else ""
    graph = " --graph" if spec["graph"] else ""
    for config in spec["configs"]:
        h, l, b = headline_tables.shape(config)
        stem = out / "calibration" / config
        calibrations.append((config, f"{p4} --hidden {h} --layers {l} --batch {b} --calibrate --plan-syncs {syncs} "
                                     f"--mode compute --iters 3{cal_passes}{graph} --csv {shlex.quote(str(stem))}.csv",
                             stem.with_name(f"{config}.calibration.json")))
    files = " ".join(f"--calibration {shlex.quote(str(f))}" for _, _, f in calibrations)
    configs = ",".join(spec["configs"])
    min_time = f" --min-time-ms {spec['min_time_ms']:g}" if spec["min_time_ms"] else ""
    passes = f" --passes {spec['passes']}" if spec["passes"] > 1 else ""
    caps = "" if spec["caps_mb"] == [25] else f" --sweep bucket-mb={','.join(f'{c:g}' for c in spec['caps_mb'])}"
    processes = {"p4": f"{p4} --sweep shape={configs} --sweep sync={','.join(spec['strategies'])}{caps} --sweep "
                       f"plan=caps{',auto' if spec['planned_syncs'] else ''} --plan-syncs {syncs} {files} "
                       f"--iters {spec['iters']}{min_time}{passes}{graph} --order-seed {{seed}} --csv {{csv}}"}
    torch = f"{shlex.quote(str(python))} -m torch.distributed.run --nproc_per_node {gpus} " \
            f"-m overlap_bench.ddp.bench_ddp --configs {' '.join(c.replace('x', ',') for c in spec['configs'])} " \
            f"--iters {spec['iters']}{min_time}{passes} --no-isolated --order-seed {{seed}}"
    if spec["ddp_caps_mb"]:
        processes["ddp"] = f"{torch} --bucket-mb {' '.join(f'{c:g}' for c in spec['ddp_caps_mb'])}" \
                           f"{' --graph' if spec['ddp_graph'] else ''} --csv {{csv}}"
    if spec["fsdp2"]:
        processes["fsdp2"] = f"{torch} --fsdp --reshard-after-forward 0 --csv {{csv}}"
    args = [arg for name, command in processes.items() for arg in ("--process", f"{name}={command}")]
    for config in spec["configs"]:
        h, l, b = headline_tables.shape(config)
        where = f"hidden={h},layers={l},batch={b}"
        picks = [(cap_label(s, c, spec), "p4", f"{where},sync={s},plan=caps" + (f",bucket_mb={c:g}" if caps else ""))
                 for s in spec["strategies"] for c in spec["caps_mb"]]
        picks += [("planned", "p4", f"{where},plan=auto")] if spec["planned_syncs"] else []
        picks += [(f"ddp-{c:g}", "ddp", f"{where},bucket_mb={c:g}") for c in spec["ddp_caps_mb"]]
        picks += [("fsdp2", "fsdp2", where)] if spec["fsdp2"] else []
        args += [arg for label, process, selector in picks
                 for arg in ("--contender", f"{label}@{config}=@{process}[{selector}]")]
    return calibrations, args + ["--baseline", spec["baseline"], "--rounds", str(spec["rounds"])]


def calibrate(calibrations, timeout):
    """Each configuration's calibration, one process each (its log beside it); a failure stops the call."""
    for config, command, path in calibrations:
        path.parent.mkdir(parents=True, exist_ok=True)
        compare_runs.progress(f"calibrating {config}")
        log = path.with_name(f"{config}.log")
        try:
            compare_runs.run_one(command, path.with_name(f"{config}.csv"), timeout, log)
        except compare_runs.ContenderFailed as failure:
            raise compare_runs.ContenderFailed(f"calibration of {config}: {failure}", failure.code) from None
        if not path.is_file():
            raise compare_runs.ContenderFailed(f"calibration of {config}: no {path} (log: {log})", 3)


def predict(spec, calibrations, ranks, predictor, tables=()):
    """predictions.csv before the runs that test it: per configuration and calibrated strategy the step
    phase4_predict gives on `ranks` ranks for each cap's plan (the first bucket 1 MiB), and the planner's plan (the
    least predicted over the planned strategies), from the calibrations in `calibrations` (another machine's, say
    2 GPUs for 4); `tables`: strategies' bucket times measured on those ranks (check_prediction.comm_table_of), used
    instead of the calibrated ones scaled (the `comm` column names the ones a row used)."""
    import pandas as pd

    rows = []
    for config in spec["configs"]:
        path = pathlib.Path(calibrations) / f"{config}.calibration.json"
        if not path.is_file():
            raise ob_tool.UsageError(f"--predict-from: no {path}")
        try:
            syncs = [s["sync"] for s in packs.read_json(path, "--predict-from", schema="calibration")["strategies"]]
        except (ValueError, KeyError, TypeError) as error:
            raise ob_tool.UsageError(f"--predict-from: '{path}' is not a calibration "
                                     f"({type(error).__name__})") from None
        comm = check_prediction.comm_args(tables, ranks, syncs)
        labels = {cap_label(s, c, spec) for s in spec["strategies"] for c in spec["caps_mb"]}
        asks = [(cap_label(s, c, spec), "caps", ["--sync", s, "--bucket-mb", f"{c:g}", "--first-bucket-mb", "1"])
                for s in syncs for c in spec["caps_mb"] if cap_label(s, c, spec) in labels]
        asks += [("planned", "auto", ["--sync", s]) for s in spec["planned_syncs"] if s in syncs]
        for sync, plan, extra in asks:
            done = subprocess.run([predictor, "--calibration", str(path), "--ranks", str(ranks), "--links", "ib400",
                                   *extra, *comm], capture_output=True, text=True, timeout=600)
            if done.returncode:
                raise ob_tool.UsageError(f"phase4_predict on {path}: {done.stderr.strip()[:200]}")
            row = pd.read_csv(io.StringIO(done.stdout), dtype={"comm_measured": str})
            row = row.fillna({"comm_measured": ""}).iloc[0]
            rows.append({"config": config, "label": sync, "plan": plan, "predicted_sync": row["sync"],
                         "ranks": ranks, "predicted_ms": row["predicted_ms"], "buckets": row["buckets"],
                         "calibrated_gpu": row["calibrated_gpu"], "calibrated_ranks": row["calibrated_ranks"],
                         "calibration_commit": row["calibration_commit"], "calibration": str(path),
                         "comm": " ".join(t for t in comm[1::2]
                                          if row["comm_measured"] and t.startswith(f"{row['comm_measured']}@"))})
    table = pd.DataFrame(rows)  # the planner's plan: the least predicted step over the planned strategies
    planned = table[table["label"] == "planned"]
    keep = planned.loc[planned.groupby("config")["predicted_ms"].idxmin()].index if len(planned) else []
    return table[(table["label"] != "planned") | table.index.isin(keep)].reset_index(drop=True)


def parse_args(argv=None):
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("--out", required=True, type=ob_tool.output_tree,
                        help="folder to write (created; must not hold a headline yet)")
    parser.add_argument("--experiment", type=ob_tool.input_file,
                        default=str(EXPERIMENT) if EXPERIMENT.is_file() else None,
                        help="the experiment file (default: the checkout's, %(default)s; required outside one)")
    parser.add_argument("--gpus", type=ob_tool.whole(1, 1024), default=2, help="ranks, one per GPU (default: 2)")
    parser.add_argument("--build", type=ob_tool.any_text,  # named in the commands; checked when they run
                        help="the build folder holding phase4_chunked_nccl (default: the checkout's build/gpu)")
    parser.add_argument("--seed", type=ob_tool.whole(0, 2 ** 32 - 1),
                        help="ob-compare's seed (default: drawn, recorded)")
    parser.add_argument("--timeout", type=ob_tool.number_in(1, 1e6), default=600,
                        help="seconds one process may take (default: 600)")
    parser.add_argument("--deadline", type=ob_tool.number_in(1, 1e7),
                        help="seconds the whole call may take: the rounds get what the "
                        "calibration leaves (ob-compare --deadline)")
    parser.add_argument("--analyze", type=ob_tool.input_folder, metavar="DIR",
                        help="remake the tables and figure from DIR/compare; run nothing")
    parser.add_argument("--dry-run", action="store_true", help="print the commands; run nothing")
    parser.add_argument("--predictions", type=ob_tool.input_file, metavar="CSV",
                        help="predictions.csv made before the run (--predict-from): "
                        "set beside the measured steps in prediction-check.csv")
    parser.add_argument("--predict-from", type=ob_tool.input_folder, metavar="DIR",
                        help="write --out/predictions.csv from the calibrations in "
                        "DIR (a headline's calibration/) for --gpus ranks, before the runs that test them; run nothing")
    parser.add_argument("--configs", type=ob_tool.listed(ob_tool.any_text, as_text=True), metavar="HxLxB,...",
                        help="run these of the experiment's configurations only "
                        "(a comparison too long for one call split over several; each configuration's contenders "
                        "still share its rounds)")
    parser.add_argument("--comm-from", type=ob_tool.input_file, metavar="CSV", nargs="+", default=[],
                        help="with --predict-from: phase 4 "
                        "comm-only sweeps over bucket sizes on --gpus ranks, one per strategy (ob-check-prediction "
                        "--comm-from): its time per bucket there instead of the calibrated one scaled")
    args = parser.parse_args(argv)
    args.build = args.build or str(ob_tool.REPO / "build" / "gpu")
    try:
        if args.comm_from and not args.predict_from:
            raise ob_tool.UsageError("--comm-from: needs --predict-from")
        args.tables = [check_prediction.comm_table_of(path) for path in args.comm_from]
        if args.experiment is None:
            raise ob_tool.UsageError("--experiment: required outside a checkout (no experiments/headline.toml here)")
        args.spec = load_experiment(args.experiment)
        if args.configs:
            chosen = args.configs.split(",")
            unknown = [c for c in chosen if c not in args.spec["configs"]]
            if unknown or not ob_tool.distinct(chosen):
                raise ob_tool.UsageError(f"--configs: '{args.configs}' is invalid: distinct configurations of the "
                                         f"experiment ({','.join(args.spec['configs'])})")
            args.spec["configs"] = chosen
        if not 1 <= args.gpus <= 1024:
            raise ob_tool.UsageError(f"--gpus: '{args.gpus}' is invalid: 1 to 1024")
        out = pathlib.Path(args.out)
        if args.predict_from:
            if (out / "predictions.csv").exists():
                raise ob_tool.UsageError(f"--out: '{args.out}' is invalid: it already holds predictions.csv")
            args.dry_run = True  # no build needed
        elif args.analyze:
            if not packs.exists(pathlib.Path(args.analyze) / "compare" / "compare.csv"):
                raise ob_tool.UsageError(f"--analyze: '{args.analyze}' is invalid: no compare/compare.csv in it")
        elif (out / "headline.csv").exists() or (out / "compare").exists():
            raise ob_tool.UsageError(f"--out: '{args.out}' is invalid: it already holds a headline")
        ob_tool.require_outputs([(f"--out ({n})", out / n) for n in headline_tables.OUTPUTS], created=True)
        args.predictions_table = headline_tables.load_predictions(args.predictions) if args.predictions else None
        if not args.analyze and not args.dry_run:
            binary = pathlib.Path(args.build) / "phase4_chunked_nccl" / "phase4_chunked_nccl"
            if not binary.is_file():
                raise ob_tool.UsageError(f"--build: '{args.build}' is invalid: no {binary} (build it first)")
    except ob_tool.UsageError as error:
        parser.error(str(error))
    return args


def main(argv=None):
    args = parse_args(argv)
    out = pathlib.Path(args.out)
    spec = args.spec
    if args.predict_from:
        out.mkdir(parents=True, exist_ok=True)
        table = predict(spec, args.predict_from, args.gpus, ob_tool.find_built("phase4_predict"), args.tables)
        ob_tool.write_text_atomic(out / "predictions.csv", table.to_csv(index=False))
        print(f"{out / 'predictions.csv'}: {len(table)} predictions for {args.gpus} ranks")
        return 0
    predictions = args.predictions_table
    if args.analyze:
        timing = packs.read_json(pathlib.Path(args.analyze) / "headline.meta.json", "--analyze", schema="meta") \
            if packs.exists(pathlib.Path(args.analyze) / "headline.meta.json") else {}
        timing = {k: timing[k] for k in ("wall_s", "calibration_s", "command_line", "experiment", "experiment_spec")
                  if k in timing}
        # the tables remade later, maybe by a newer commit than the runs': which one, and how
        timing["analyzed"] = {"commit": ob_tool.commit_id(), "command_line": sys.argv,
                              "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        return headline_tables.write(pathlib.Path(args.analyze) / "compare", out, spec, timing, predictions)
    calibrations, compare_args = plan(spec, args.gpus, pathlib.Path(args.build).resolve(), out.resolve())
    compare_args += ["--out", str(out / "compare"), "--timeout", f"{args.timeout:g}"]
    compare_args += ["--seed", str(args.seed)] if args.seed is not None else []
    if args.dry_run:
        for config, command, _ in calibrations:
            print(f"calibrate {config}: {command}")
        print("ob-compare " + " ".join(shlex.quote(a) for a in compare_args))
        return 0
    start = time.monotonic()
    try:
        calibrate(calibrations, args.timeout)
    except compare_runs.ContenderFailed as failure:
        print(f"ob-headline: {failure}", file=sys.stderr)
        return failure.code
    calibrated = time.monotonic() - start
    if args.deadline:  # the whole call's: what the calibration left
        compare_args += ["--deadline", f"{max(1.0, args.deadline - calibrated):.0f}"]
    code = compare.main(compare_args)
    if code != 0:
        return code
    timing = {"wall_s": round(time.monotonic() - start, 1), "calibration_s": round(calibrated, 1),
              "command_line": sys.argv, "experiment": str(args.experiment), "experiment_spec": spec}
    return headline_tables.write(out / "compare", out, spec, timing, predictions)


def cli():
    """The console command ob-headline (pyproject.toml) and `python3 headline.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
