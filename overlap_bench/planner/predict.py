#!/usr/bin/env python3
"""The planner's what-if: from a phase 4 calibration (phase4_chunked_nccl --calibrate), the predicted overlapped step
of the same model from 2 to 1024 GPUs, 8 per node on the calibrated link and nodes joined by each given network, with
the best bucket plan at each point; writes the CSV (phase4_predict computes it) and a scaling plot labelled as a
prediction with its inputs, and prints the PyTorch DDP bucket_cap_mb the model predicts best on the calibrated ranks.
With --model, the same for a transformer (a preset or a config.json) whose compute is estimated from the
calibration's GEMM rates; it prints the recommended strategy and DDP cap from 8 GPUs up, and --layers-figure draws
its backward steps (compute and gradient) with the chosen bucket boundaries.

Usage: predict.py CALIBRATION.json --csv what-if.csv -o what-if.png [--links ib400,eth100] [--ranks 2,4,...]
                  [--sync STRATEGY] [--bucket-mb CAP [--first-bucket-mb FIRST]]
                  [--model NAME|config.json [--seq N] [--micro-batch N] [--blocks N]]
                  [--layers-csv steps.csv [--layers-figure steps.png]]
"""

import pathlib
import subprocess

import matplotlib.pyplot as plt

from overlap_bench.core import figures
from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool
from overlap_bench.core import packs

REPO = pathlib.Path(__file__).resolve().parents[2]
# phase4_predict's columns, declared once in schema.json (the binary embeds the same file)
COLUMNS = ob_csv.SCHEMA["predict"]["required"]
LAYER_COLUMNS = ob_csv.SCHEMA["predict_layers"]["required"]


def find_predictor(given):
    """phase4_predict: --predictor, else on PATH (cmake --install), else in this checkout's build folders."""
    return ob_tool.find_built("phase4_predict", given)


def run_predictor(command):
    """Runs phase4_predict (command[0]); its own usage errors (a bad calibration, option) come back as ours."""
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode == 2:
        raise ob_tool.UsageError(result.stderr.strip().split(": error: ", 1)[-1])
    if result.returncode != 0:
        raise OSError(f"{command[0]} exited {result.returncode}: {result.stderr.strip()}")


def predict(args):
    """Runs phase4_predict into the CSV."""
    command = [args.predictor, "--calibration", str(args.calibration), "--csv", str(args.csv), "--ranks", args.ranks,
               "--links", args.links, "--gpus-per-node", str(args.gpus_per_node)]
    if args.sync:
        command += ["--sync", args.sync]
    if args.bucket_mb is not None:
        command += ["--bucket-mb", str(args.bucket_mb), "--first-bucket-mb", str(args.first_bucket_mb)]
    if args.model:
        command += ["--model", args.model, "--seq", str(args.seq), "--micro-batch", str(args.micro_batch),
                    "--blocks", str(args.blocks)]
    if args.layers_csv:
        command += ["--layers-csv", str(args.layers_csv)]
    run_predictor(command)
    frame = packs.read_csv(args.csv, "phase4_predict's CSV")
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ob_tool.UsageError(f"{args.csv}: missing columns {missing}")
    return frame


def workload(calibration, args):
    """The predicted model in words."""
    if args.model:
        blocks = f", first {args.blocks} blocks" if args.blocks else ""
        return (f"{args.model}{blocks}, seq {args.seq} x {args.micro_batch} per GPU, compute ESTIMATED from "
                f"the calibration's GEMM rates")
    model = calibration["model"]
    return f"H={model['hidden']} L={model['layers']} B={model['batch']} per GPU"


def plot(frame, calibration, gpus_per_node, output, what, plan="best plan"):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for link, part in frame.groupby("link", sort=False):
        part = part.sort_values("ranks")
        line, = axes[0].plot(part["ranks"], part["predicted_ms"], marker="o", label=f"{link}: {plan}")
        axes[0].plot(part["ranks"], part["ddp_predicted_ms"], ls="--", color=line.get_color(),
                     label=f"{link}: best DDP cap")
        extrapolated = part[part["extrapolated"] == 1]
        axes[0].scatter(extrapolated["ranks"], extrapolated["predicted_ms"], s=90, facecolors="none",
                        edgecolors="black", zorder=3)
        axes[1].plot(part["ranks"], part["buckets"], marker="o", color=line.get_color(), label=link)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GPUs")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("predicted overlapped step (ms)")
    axes[0].legend(fontsize=8)
    axes[1].set_ylabel(f"buckets in the {plan}")
    axes[1].legend(fontsize=8)
    fig.suptitle(f"PREDICTION, not a measurement: {what}, calibrated on {calibration['ranks']}x "
                 f"{calibration['gpu']} (commit {calibration['commit']})\n"
                 f"{gpus_per_node} GPUs per node on the calibrated link; circled: buckets outside the calibrated sizes",
                 fontsize=9)
    figures.save_figure(fig, output)


def plot_layers(steps, calibration, output, what, title=None):
    """Each backward step's compute and gradient along the backward (x: the gradient completed, GiB), with the
    chosen plan's bucket ends (solid) and those of DDP's recommended cap (dashed). `title`: the figure's first line
    (default: it is a prediction)."""
    gib = steps["cumulative_grad_mib"] / 1024
    start = gib - steps["grad_mib"] / 1024
    fig, axes = plt.subplots(2, 1, figsize=(11, 5.5), sharex=True)
    axes[0].bar(start, steps["backward_ms"], width=steps["grad_mib"] / 1024, align="edge", color="tab:blue",
                edgecolor="tab:blue", linewidth=0.3)
    axes[1].bar(start, steps["grad_mib"], width=steps["grad_mib"] / 1024, align="edge", color="tab:orange",
                edgecolor="tab:orange", linewidth=0.3)
    estimated = bool(steps["compute_estimated"].iloc[0])
    axes[0].set_ylabel("backward compute (ms)" + (", estimated" if estimated else ", measured"))
    axes[1].set_ylabel("gradient (MiB)")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("gradient completed along the backward (GiB)")
    for column, style, label in (("bucket", "-", f"{steps['sync'].iloc[0]}: {steps['buckets'].iloc[0]} buckets"),
                                 ("ddp_bucket", "--", f"DDP bucket_cap_mb {steps['ddp_bucket_cap_mb'].iloc[0]:g}")):
        ends = gib[steps[column].ne(steps[column].shift(-1))].iloc[:-1]
        for k, end in enumerate(ends):
            for ax in axes:
                ax.axvline(end, ls=style, color="black" if style == "-" else "tab:red", lw=0.6,
                           label=label if (k == 0 and ax is axes[0]) else None)
    axes[0].legend(fontsize=8, loc="upper right")
    for ax in axes:
        ax.grid(alpha=0.3)
    title = title or f"PREDICTION, not a measurement: {what}"
    fig.suptitle(f"{title}\nbuckets of the best plan on {calibration['ranks']}x "
                 f"{calibration['gpu']} (commit {calibration['commit']})", fontsize=9)
    figures.save_figure(fig, output)


def recommendations(frame):
    """Per link, the strategy and DDP cap predicted best from 8 GPUs up, in words."""
    lines = []
    for link, part in frame[frame["ranks"] >= 8].groupby("link", sort=False):
        points = [f"{r.ranks}: {r.sync}, cap {r.ddp_bucket_cap_mb:g} MiB"
                  for r in part.sort_values("ranks").itertuples()]
        lines.append(f"  {link}: " + "; ".join(points))
    return lines


def main():
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("calibration", type=ob_tool.input_file.path,
                        help="calibration JSON written by phase4 --calibrate")
    parser.add_argument("--csv", required=True, type=ob_tool.output_file().path, help="prediction CSV to write")
    parser.add_argument("-o", "--output", type=ob_tool.output_path, help="scaling plot to write (.png, .pdf, .svg)")
    parser.add_argument("--ranks", type=ob_tool.listed(ob_tool.whole(2, 1 << 20), as_text=True),
                        default="2,4,8,16,32,64,128,256,512,1024",
                        help="GPU counts (default: 2 to 1024 by powers of 2)")
    parser.add_argument("--links", type=ob_tool.listed(ob_tool.any_text, as_text=True), default="ib400,eth100",
                        help="networks between nodes: ib400, eth100 or NAME:GBPS:LATENCY_US (default: ib400,eth100)")
    parser.add_argument("--gpus-per-node", type=ob_tool.whole(1, 1024), default=8, help="GPUs per node (default: 8)")
    parser.add_argument("--sync", type=ob_tool.any_text,
                        help="predict this calibrated strategy only (default: the best at each point)")
    parser.add_argument("--bucket-mb", type=ob_tool.number_in(1e-6, 1e6),
                        help="predict this plan (buckets of at most this many MiB, as phase 4's) instead of the best")
    parser.add_argument("--first-bucket-mb", type=ob_tool.number_in(1e-6, 1e6), default=1.0,
                        help="with --bucket-mb: the first bucket's cap (default: 1, as phase 4's)")
    parser.add_argument("--model", type=ob_tool.any_text,
                        help="a transformer to predict instead of the calibrated model: a preset (gpt2, "
                        "gpt2-xl, llama3-8b, qwen2.5-7b) or a config.json; its compute is estimated")
    parser.add_argument("--seq", type=ob_tool.whole(1, 1 << 20), default=2048,
                        help="with --model: tokens per sequence (default: 2048)")
    parser.add_argument("--micro-batch", type=ob_tool.whole(1, 1 << 16), default=1,
                        help="with --model: sequences per GPU (default: 1)")
    parser.add_argument("--blocks", type=ob_tool.whole(0, 4096), default=0,
                        help="with --model: its first N blocks only (default: all)")
    parser.add_argument("--layers-csv", type=ob_tool.output_file().path,
                        help="write every backward step with the buckets of the best plan on the calibrated GPUs")
    parser.add_argument("--layers-figure", type=ob_tool.output_path,
                        help="with --layers-csv: draw those steps' compute and gradient with the bucket boundaries")
    parser.add_argument("--predictor", type=ob_tool.executable,
                        help="the phase4_predict binary (default: on PATH, or in build/)")
    args = parser.parse_args()
    if not args.model and any(getattr(args, a) != d for a, d in (("seq", 2048), ("micro_batch", 1), ("blocks", 0))):
        raise ob_tool.UsageError("--seq, --micro-batch and --blocks need --model")
    if args.layers_figure and not args.layers_csv:
        raise ob_tool.UsageError("--layers-figure needs --layers-csv")
    if args.layers_csv and not args.layers_csv.parent.is_dir():
        raise ob_tool.UsageError(f"--layers-csv: '{args.layers_csv}' is invalid: its directory must exist")
    ob_tool.require_input(args.calibration, "the calibration", 64 << 20)
    if not args.csv.parent.is_dir():
        raise ob_tool.UsageError(f"--csv: '{args.csv}' is invalid: its directory must exist")
    outputs = [("--csv", args.csv), ("--output", args.output), ("--layers-csv", args.layers_csv),
               ("--layers-figure", args.layers_figure)]
    inputs = [("the calibration", args.calibration)] + ([("--model", pathlib.Path(args.model))] if args.model else [])
    ob_tool.require_outputs([(name, path) for name, path in outputs if path], inputs)
    args.predictor = find_predictor(args.predictor)
    frame = predict(args)
    calibration = packs.read_json(args.calibration, "--calibration", schema="calibration")
    plan = "best plan" if args.bucket_mb is None else f"plan of {args.bucket_mb:g} MiB buckets"
    what = workload(calibration, args)
    if args.output:
        plot(frame, calibration, args.gpus_per_node, args.output, what, plan)
    if args.layers_figure:
        steps = packs.read_csv(args.layers_csv, "phase4_predict's --layers-csv")
        missing = [c for c in LAYER_COLUMNS if c not in steps.columns]
        if missing:
            raise ob_tool.UsageError(f"{args.layers_csv}: missing columns {missing}")
        plot_layers(steps, calibration, args.layers_figure, what)
    first = frame[frame["ranks"] == frame["ranks"].min()].iloc[0]
    print(f"predict.py: {len(frame)} points in {args.csv} ({what}); at {first['ranks']} GPUs the {plan} is "
          f"{first['buckets']} buckets ({first['sync']}), {first['predicted_ms']:.3f} ms predicted; recommended "
          f"PyTorch DDP bucket_cap_mb: {first['ddp_bucket_cap_mb']:g} ({first['ddp_predicted_ms']:.3f} ms predicted)")
    if args.model:
        print("predict.py: the strategy and DDP bucket_cap_mb predicted best, by GPUs (8 per node unless told):")
        print("\n".join(recommendations(frame)))
    return 0


def cli():
    """The console command (pyproject.toml) and `python3 predict.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
