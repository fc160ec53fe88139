#!/usr/bin/env python3
"""The planner's predictions against the steps that tested them: one point per row (configuration x plan x layout)
of one or more checks, ob-headline's prediction-check.csv or check_prediction.py's table (both hold predicted_ms and
measured_ms), measured over predicted on log axes, the diagonal and its +-10 % band drawn, one colour per CSV (named
with --names, e.g. the layout: "4 GPUs, one node", "2 x 2 emulated nodes"; checks given one name are one set, as the
parts of a comparison split over calls). Prints how many points lie in the band; --csv writes per name, and over all,
the points, how many lie in the band and the mean and worst |error| (error = measured / predicted - 1).

Usage: plot_predictions.py CHECK.csv [...] --names NAME [...] -o predictions.png [--title TEXT] [--csv summary.csv]
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402
import pandas as pd  # noqa: E402

from overlap_bench.core import figures
from overlap_bench.core import ob_tool
from overlap_bench.core import packs

BAND = 0.10


def load(path):
    """The check's (predicted, measured) pairs, every one a finite positive time, or a usage error naming the file."""
    frame = packs.read_csv(path, "CHECK", most=64 << 20)
    if not {"predicted_ms", "measured_ms"} <= set(frame.columns) or frame.empty:
        raise ob_tool.UsageError(f"CHECK: '{path}' is invalid: no rows of predicted_ms and measured_ms")
    pairs = frame[["predicted_ms", "measured_ms"]].apply(pd.to_numeric, errors="coerce")
    if not (pairs.gt(0) & pairs.lt(1e9)).all().all():
        raise ob_tool.UsageError(f"CHECK: '{path}' is invalid: predicted_ms and measured_ms must be times in "
                                 "(0, 1e9) ms")
    return pairs


def plot(checks, output, title):
    fig, ax = plt.subplots(figsize=(6.4, 6.4))
    values = pd.concat([pairs for _, pairs in checks])
    low, high = values.min().min() / 1.3, values.max().max() * 1.3
    grid = [low * (high / low) ** (k / 50) for k in range(51)]
    ax.fill_between(grid, [g * (1 - BAND) for g in grid], [g * (1 + BAND) for g in grid], color="0.9",
                    label=f"within +-{BAND:.0%}")
    ax.plot(grid, grid, color="0.4", lw=1)
    inside = 0
    for name, pairs in checks:
        error = pairs["measured_ms"] / pairs["predicted_ms"] - 1
        inside += int((error.abs() <= BAND).sum())
        ax.scatter(pairs["predicted_ms"], pairs["measured_ms"], s=22, label=f"{name}: {len(pairs)} points, mean "
                   f"|error| {error.abs().mean():.1%}, worst {error.abs().max():.1%}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        axis.set_minor_formatter(ticker.NullFormatter())
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel("predicted step (ms)")
    ax.set_ylabel("measured step (ms)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    fig.subplots_adjust(left=0.12, right=0.97, top=0.93, bottom=0.28)
    figures.save_figure(fig, output)
    return inside, len(values)


def summary(checks):
    """Per name and over all (name "all"): points, within_band, mean_abs_error, worst_abs_error."""
    rows = []
    for name, pairs in [*checks, ("all", pd.concat([p for _, p in checks], ignore_index=True))]:
        error = (pairs["measured_ms"] / pairs["predicted_ms"] - 1).abs()
        rows.append({"name": name, "points": len(pairs), "within_band": int((error <= BAND).sum()),
                     "mean_abs_error": error.mean(), "worst_abs_error": error.max()})
    return pd.DataFrame(rows)


def main(argv=None):
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("checks", nargs="+", type=ob_tool.input_file, metavar="CHECK.csv",
                        help="checks holding predicted_ms and measured_ms")
    parser.add_argument("--names", nargs="+", required=True, type=ob_tool.repeatable(ob_tool.any_text),
                        help="a name per CHECK.csv, in the same order (a name twice: those checks drawn as one)")
    parser.add_argument("-o", "--output", required=True, type=ob_tool.output_file(".png"),
                        help="the figure to write (.png)")
    parser.add_argument("--title", type=ob_tool.any_text,
                        default="The planner's predictions against the measured steps")
    parser.add_argument("--csv", type=ob_tool.output_file(),
                        help="write per name and over all: points, within the band, mean and worst |error|")
    args = parser.parse_args(argv)
    if len(args.names) != len(args.checks):
        raise ob_tool.UsageError(f"--names: {len(args.names)} given for {len(args.checks)} checks: one each")
    ob_tool.require_outputs([("-o", args.output)] + ([("--csv", args.csv)] if args.csv else []),
                            [("CHECK", c) for c in args.checks])
    loaded = [(name, load(path)) for name, path in zip(args.names, args.checks)]
    checks = [(name, pd.concat([p for n, p in loaded if n == name], ignore_index=True))
              for name in dict.fromkeys(args.names)]
    inside, total = plot(checks, args.output, args.title)
    if args.csv:
        ob_tool.write_text_atomic(args.csv, summary(checks).to_csv(index=False))
    print(f"{args.output}: {total} predictions, {inside} within +-{BAND:.0%} of the measured step")
    return 0


def cli():
    """The console command (pyproject.toml) and `python3 plot_predictions.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
