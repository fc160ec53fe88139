#!/usr/bin/env python3
"""Makes every figure that applies to the CSVs in a results folder and writes RESULTS_DIR/report.md with the
summary tables and the figures linked. Summary CSVs get a bar chart (and a scaling chart where a sweep varies a
parameter); timeline CSVs get Gantt charts of their first two iterations and a per-chunk timing chart; power
CSVs get a power-over-time chart.

Usage: report.py RESULTS_DIR
"""
import pathlib

import matplotlib.pyplot as plt
import pandas as pd

import ob_csv
import plot_chunks
import plot_gantt
import plot_interference
import plot_power
import plot_scaling
import plot_summary

TABLE_COLUMNS = ["mode", "time_ms_p50", "time_ms_p95", "speedup", "overlap_efficiency", "overlap_pct",
                 "compute_slowdown", "busbw_GBps", "wrong", "gflops", "predicted_ms", "prediction_error"]
INTERFERENCE_COLUMNS = ["msg_mb", "gemm_ms", "gemm_overlap_ms", "compute_slowdown", "comm_ms", "comm_overlap_ms",
                        "comm_stretch", "busbw_GBps", "covered"]


def markdown_table(frame, columns):
    """A GitHub-flavoured Markdown table of `columns` (those present), numbers to 4 significant digits."""
    columns = [c for c in columns if c in frame.columns and frame[c].notna().any()]

    def cell(value):
        if isinstance(value, float):
            return "" if value != value else f"{value:.4g}"
        return ob_csv.markdown(value)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame[columns].itertuples(index=False)]
    return "\n".join(lines)


def summary_section(path, figures):
    frame = ob_csv.load_summary(path)
    if "predicted_ms" in frame:  # the planner's rows: measured over predicted, less one
        frame["prediction_error"] = frame["time_ms_p50"] / frame["predicted_ms"] - 1
    lines = [f"## {ob_csv.markdown(path.stem)}", ""]
    info = ob_csv.read_metadata(path)
    if info:
        gpus = info.get("gpus") if isinstance(info.get("gpus"), list) else []
        gpu = gpus[0].get("gpu_name", "no GPU") if gpus and isinstance(gpus[0], dict) else "no GPU"
        command = info.get("command_line") if isinstance(info.get("command_line"), list) else []
        lines += [f"`{ob_csv.markdown(' '.join(map(str, command)))}`", "",
                  ob_csv.markdown(f"commit {info.get('commit')}, {info.get('date_utc')}, host {info.get('host')}, "
                                  f"{gpu}, {info.get('ranks')} rank(s)"), ""]
    is_map = (frame["mode"] == "interference").any()
    columns = [c for c in ob_csv.config_columns(frame) if not (is_map and c == "msg_mb")]
    for config, part in frame.groupby(columns, sort=False, dropna=False) if columns else [("", frame)]:
        label = ob_csv.config_label(part.iloc[0], columns)
        if label:
            lines += [f"**{ob_csv.markdown(label)}**", ""]
        table = INTERFERENCE_COLUMNS if is_map else TABLE_COLUMNS + (["kernel", "variant"] if "variant" in part else [])
        lines += [markdown_table(part, table), ""]
    if is_map:  # the interference map: its own figure, no bars
        figure = figures / f"{path.stem}.interference.png"
        plot_interference.plot(frame, figure, ob_csv.hardware_line(info))
        return lines + [f"![{figure.name}](figures/{figure.name})", ""]
    bars = figures / f"{path.stem}.bars.png"
    try:
        drawn = plot_summary.bars(frame)
    except ob_csv.UsageError as error:
        raise ob_csv.UsageError(f"{path}: {error}") from None
    plot_summary.plot(drawn, bars, ob_csv.hardware_line(info), path.stem)
    lines += [f"![{bars.name}](figures/{bars.name})", ""]
    for x in plot_scaling.X_CHOICES:
        if x in frame.columns and frame[x].nunique() > 1 and x != "ranks":
            scaling = figures / f"{path.stem}.scaling-{x}.png"
            plot_scaling.plot(frame, x, scaling, ob_csv.hardware_line(info))
            lines += [f"![{scaling.name}](figures/{scaling.name})", ""]
            break
    return lines


def timeline_section(path, figures):
    frame = ob_csv.load_timeline(path)
    lines = [f"## {ob_csv.markdown(path.stem)}", ""]
    points = ob_csv.timeline_points(frame)
    if len(points) > 1:  # a sweep: its first point is drawn
        lines += [f"A sweep of {len(points)} points; drawn: {ob_csv.markdown(points[0])} "
                  f"(`plot_gantt.py --point` draws another).", ""]
        frame = frame[frame["point"] == points[0]]
    first = [int(i) for i in sorted(frame["iter"].unique())[:2]]
    # One chart per mode (lanes are "<mode>:<lane>"): the sequential run and each overlapped strategy.
    modes = list(dict.fromkeys(lane.split(":")[0] for lane in frame["lane"]))
    for mode in [m for m in modes if m in ("seq", "overlap", "thread", "nonblocking")] or modes[:1]:
        part = frame[frame["lane"].str.startswith(mode + ":")]
        gantt = figures / f"{path.stem}.gantt-{mode}.png"
        hardware = ob_csv.hardware_line(ob_csv.timeline_metadata(path))
        where = f" ({points[0]})" if points[0] else ""
        plot_gantt.plot(plot_gantt.select(part, first, [], []), gantt,
                        f"{path.stem}{where}: {mode}, iterations {first}" + (f"\n{hardware}" if hardware else ""))
        lines += [f"![{gantt.name}](figures/{gantt.name})", ""]
    if (frame["chunk"] >= 0).any():
        chunks = figures / f"{path.stem}.chunks.png"
        plot_chunks.plot(plot_chunks.per_chunk(frame, []), chunks)
        lines += [f"![{chunks.name}](figures/{chunks.name})", ""]
    return lines


def ratio_section(summaries, figures):
    """The headline figure where a folder holds phase 4 and PyTorch DDP summaries of the same configurations: per
    configuration, phase 4's overlapped step over DDP's (each at its best: the fastest overlapped row), 1.0 marked."""
    key = ["hidden", "layers", "batch"]
    frames = [f for f in (ob_csv.load_summary(p) for p in summaries) if set(key) <= set(f.columns)]
    if not frames:
        return []
    rows = pd.concat(frames, ignore_index=True)
    overlap = rows[rows["mode"] == "overlap"]
    ours = overlap[(overlap["system"] == "overlap-bench") & (overlap["phase"] == "phase4")].groupby(key)["time_ms_p50"].min()
    ddp = overlap[overlap["system"] == "pytorch-ddp"].groupby(key)["time_ms_p50"].min()
    ratio = (ours / ddp).dropna()
    if ratio.empty:
        return []
    meta = next((ob_csv.read_metadata(p) for p in summaries if p.name.startswith("phase4")), {})
    fig, ax = plt.subplots(figsize=(8, 3.6))
    labels = [f"{h},{l},{b}" for h, l, b in ratio.index]
    ax.bar(range(len(ratio)), ratio.values, color=[ob_csv.MODE_COLOURS["overlap"] if r <= 1 else "#d62728"
                                                     for r in ratio.values])
    ax.axhline(1.0, color="black", linewidth=1)
    for x, r in enumerate(ratio.values):
        ax.annotate(f"{r:.2f}", (x, r), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(ratio)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_xlabel("configuration (hidden, layers, batch per GPU)")
    ax.set_ylabel("phase 4 / DDP overlapped step")
    ax.set_title("phase 4 at its best over PyTorch DDP (expert settings) at its best: below 1.0, phase 4 is faster\n"
                 + ob_csv.hardware_line(meta), fontsize=9)
    output = figures / "phase4-over-ddp.png"
    ob_csv.save_figure(fig, output)
    return ["## phase 4 against PyTorch DDP", "", f"![{output.name}](figures/{output.name})", ""]


def check_summary(path):
    """Everything a summary section reads, checked before anything is written: the CSV, its metadata, its modes."""
    frame = ob_csv.load_summary(path)
    ob_csv.read_metadata(path)
    try:
        if (frame["mode"] == "interference").any():
            plot_interference.rows(frame)
            return
        plot_summary.bars(frame)
    except ob_csv.UsageError as error:
        raise ob_csv.UsageError(f"{path}: {error}") from None


def write_report(directory):
    directory = pathlib.Path(directory)
    if directory.is_dir() and (directory / "figures").exists() and not (directory / "figures").is_dir():
        raise ob_csv.UsageError(f"{directory / 'figures'}: not a directory (the report draws its figures there)")
    if not directory.is_dir():
        raise ob_csv.UsageError(f"{directory}: not a directory")
    csvs = sorted(directory.glob("*.csv"))
    kinds = {path: ob_csv.kind_of(path) for path in csvs}
    if not any(kinds.values()):
        raise ob_csv.UsageError(f"{directory}: no overlap-bench CSV (summary or timeline) in it")
    loaders = {"summary": check_summary, "power": ob_csv.load_power,
               # A timeline with its header only (a sweep before sweeps kept their events): nothing to draw.
               "timeline": lambda path: len(path.read_text().splitlines()) > 1 and ob_csv.load_timeline(path)}
    for path, kind in kinds.items():  # every CSV checked before anything is written
        if kind:
            loaders[kind](path)
    figures = directory / "figures"
    figures.mkdir(exist_ok=True)
    lines = ["# overlap-bench report", "", f"From the CSVs in `{directory}`. Columns: see METRICS.md.", ""]
    for path in csvs:
        if kinds[path] == "summary":
            lines += summary_section(path, figures)
    lines += ratio_section([p for p in csvs if kinds[p] == "summary"], figures)
    for path in csvs:
        if kinds[path] == "timeline" and len(path.read_text().splitlines()) > 1:
            lines += timeline_section(path, figures)
    for path in csvs:
        if kinds[path] == "power":  # <stem>.power.csv: shaded where <stem>.timeline.csv has overlapped iterations
            power = figures / f"{path.stem}.png"
            timeline = path.parent / (path.name[: -len(".power.csv")] + ".timeline.csv")
            spans = plot_power.mode_spans(ob_csv.load_timeline(timeline), "overlap") if timeline.is_file() else []
            plot_power.plot(ob_csv.load_power(path), power, spans)
            lines += [f"## {path.stem}", "", f"![{power.name}](figures/{power.name})", ""]
    report = directory / "report.md"
    ob_csv.write_text_atomic(report, "\n".join(lines) + "\n")  # whole or not at all
    return report


def main():
    parser = ob_csv.ArgumentParser(description=ob_csv.describe(__doc__))
    parser.add_argument("results_dir", help="folder holding the CSVs of a run")
    args = parser.parse_args()
    print(write_report(args.results_dir))
    return 0


def cli():
    """The console command (pyproject.toml) and `python3 report.py`."""
    raise SystemExit(ob_csv.main_guard(main))


if __name__ == "__main__":
    cli()
