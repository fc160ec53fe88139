#!/usr/bin/env python3
"""Where each configuration stops hiding its communication as the link slows: phase 4's overlapped step over its
compute-only step, and the share of communication hidden, against the link's bandwidth, one line per configuration.
The steps are phase 4 summaries made with --transport (each names its transport); each transport's bandwidth is
fitted from its comm-only sweep over bucket sizes (--links-from: step = buckets * alpha + bytes / beta).

Usage: plot_topology.py STEP.csv [...] --links-from COMM.csv [...] -o topology.png
"""
import matplotlib.pyplot as plt

from overlap_bench.planner import check_prediction
from overlap_bench.core import figures
from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool


def bandwidths(paths):
    """transport -> fitted bandwidth (GB/s) from comm-only sweeps."""
    return {layout[0]: beta for layout, _, _, beta in map(check_prediction.link_fit_of, paths)}


def points(paths, links):
    """configuration -> [(bandwidth, overlap / compute, comm hidden %)], by bandwidth."""
    lines = {}
    for path in paths:
        frame = ob_csv.load_summary(path).set_index("mode")
        if not {"compute", "overlap"} <= set(frame.index) or "hidden" not in frame:
            raise ob_tool.UsageError(f"{path}: not a phase 4 run with compute-only and overlapped rows")
        transport = str(frame["transport"].iloc[0]) if "transport" in frame else "nvlink"
        if transport not in links:
            raise ob_tool.UsageError(f"{path}: a run on --transport {transport}, and no --links-from sweep on it")
        config = ",".join(str(int(frame[k].iloc[0])) for k in ("hidden", "layers", "batch"))
        overlap = frame.loc["overlap"]
        ratio = overlap["time_ms_p50"] / frame.loc["compute", "time_ms_p50"]
        lines.setdefault(config, []).append((links[transport], ratio, overlap.get("overlap_pct", float("nan")),
                                             transport))
    return {config: sorted(values) for config, values in sorted(lines.items())}


def plot(lines, output, hardware=""):
    fig, (ratio, hidden) = plt.subplots(1, 2, figsize=(11, 4.2))
    for config, values in lines.items():
        xs = [v[0] for v in values]
        ratio.plot(xs, [v[1] for v in values], marker="o", label=config)
        hidden.plot(xs, [v[2] for v in values], marker="o", label=config)
        for x, y, _, transport in values:
            ratio.annotate(transport, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    for ax in (ratio, hidden):
        ax.set_xscale("log")
        ax.set_xlabel("link bandwidth, fitted (GB/s)")
        ax.grid(alpha=0.3)
    ratio.set_ylabel("overlapped step / compute-only step")
    ratio.axhline(1.0, color="grey", linewidth=0.8)
    ratio.set_yscale("log")
    hidden.set_ylabel("communication hidden (%)")
    hidden.set_ylim(-5, 105)
    hidden.legend(fontsize=8)
    fig.suptitle("phase 4 over slower links" + (f"\n{hardware}" if hardware else ""), fontsize=9)
    figures.save_figure(fig, output)


def main():
    parser = figures.figure_parser(__doc__, "steps", "phase 4 summaries, one per configuration and transport",
                                  nargs="+")
    parser.add_argument("--links-from", nargs="+", required=True, type=ob_tool.input_file,
                        help="comm-only sweeps, one per transport")
    args = parser.parse_args()
    plot(points(args.steps, bandwidths(args.links_from)), args.output,
         ob_csv.hardware_line(ob_csv.read_metadata(args.steps[0])))
    return 0


def cli():
    """The console command (pyproject.toml) and `python3 plot_topology.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
