"""ob-tune-check: the tuner's verdicts held against fresh processes, one per setting, interleaved (ob-compare):
for each JOB=PROBE_DIR:COMPARE_DIR, the probe's tune (probe.json) and ob-compare's compare.csv (its contenders named
by tune.contender, the job's own "own", the baseline) into one row of --csv (tune.held_against).

  ob-tune-check --csv tune-check.csv ddp25=probes/ddp25:compare/ddp25 fsdp2=probes/fsdp2:compare/fsdp2
"""
import argparse
import csv
import io
import pathlib
import sys

from overlap_bench.core import inputs
from overlap_bench.core import ob_tool
from overlap_bench.probe import tune


def parse(argv=None):
    parser = ob_tool.ArgumentParser(prog="ob-tune-check", description=__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("jobs", nargs="+", type=ob_tool.any_text, metavar="JOB=PROBE_DIR:COMPARE_DIR")
    parser.add_argument("--csv", required=True, type=ob_tool.output_file(), help="the table to write")
    args = parser.parse_args(argv)
    jobs = []
    for text in args.jobs:
        name, _, folders = text.partition("=")
        probe, _, compare = folders.partition(":")
        if not (name and probe and compare):
            parser.error(f"'{text}' is invalid: JOB=PROBE_DIR:COMPARE_DIR")
        if name in (j[0] for j in jobs):
            parser.error(f"'{name}': a job named twice")
        for folder, need in ((probe, "probe.json"), (compare, "compare.csv")):
            if not (pathlib.Path(folder) / need).is_file():
                parser.error(f"'{folder}': no {need} in it")
        jobs.append((name, pathlib.Path(probe), pathlib.Path(compare)))
    ob_tool.require_outputs([("--csv", args.csv)], [(name, p / "probe.json") for name, p, _ in jobs] +
                            [(name, c / "compare.csv") for name, _, c in jobs])
    return args, jobs


def read_compared(path):
    """ob-compare's rows as {contender: (ratio, lo, hi)}, through the one CSV loader: its columns there and its
    ratios finite numbers above zero, or a usage error naming the file."""
    from overlap_bench.core import packs

    import pandas as pd

    columns = ("contender", "ratio", "ratio_ci_lo", "ratio_ci_hi")
    frame = packs.read_csv(path, "JOB", required=columns, dtype={"contender": str}, keep_default_na=False)
    numbers = frame[list(columns[1:])].apply(pd.to_numeric, errors="coerce")
    bad = ~((numbers > 0) & (numbers < 1e12)).all(axis=1)
    if bad.any():
        raise ob_tool.UsageError(f"{path}: contender '{frame['contender'][bad].iloc[0]}': ratio and interval must be "
                                 "numbers above zero")
    return {str(name): tuple(float(v) for v in values) for name, values in zip(frame["contender"], numbers.values)}


def main(argv=None):
    args, jobs = parse(argv)
    rows = []
    for name, probe, compare in jobs:
        result = inputs.load_json(probe / "probe.json", "JOB", schema="probe_tune")
        if "tune" not in result:
            raise ob_tool.UsageError(f"{probe}/probe.json: the probe ran without its tuner (tune=True)")
        compared = read_compared(compare / "compare.csv")
        if "own" not in compared:
            raise ob_tool.UsageError(f"{compare}/compare.csv: no contender 'own' (the job's own setting)")
        picked = result["tune"]["best"]
        if picked and tune.contender(picked) not in compared:
            raise ob_tool.UsageError(f"{compare}/compare.csv: no contender '{tune.contender(picked)}' (the setting "
                                     f"the tuner picked, {picked})")
        rows.append(tune.held_against(name, result["tune"], compared))
    out = io.StringIO()
    writer = csv.DictWriter(out, list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    ob_tool.write_text_atomic(pathlib.Path(args.csv), out.getvalue())
    for row in rows:
        print(f"{row['job']}: picked {row['picked']} (claimed {row['claimed_ratio']:.3f}x, fresh processes "
              f"{row['measured_ratio']:.3f}x [{row['measured_ci_lo']:.3f}, {row['measured_ci_hi']:.3f}]); the "
              f"fastest by fresh processes {row['fastest']} {row['fastest_ratio']:.3f}x", file=sys.stderr)
    return 0


def cli():
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
