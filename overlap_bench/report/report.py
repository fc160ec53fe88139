#!/usr/bin/env python3
"""Makes every figure that applies to the CSVs in a results folder and writes RESULTS_DIR/report.md with the
summary tables and the figures linked. Summary CSVs get a bar chart (and a scaling chart where a sweep varies a
parameter), rows whose spread is wide marked unstable; timeline CSVs get Gantt charts of their first two iterations
and a per-chunk timing chart; power CSVs get a power-over-time chart; an ob-compare result (compare.csv) its ratios
with their intervals and verdicts in words. Ratios between systems come only from ob-compare.

Usage: report.py RESULTS_DIR
"""
import pathlib
import shutil

import pandas as pd

from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool
from overlap_bench.core import packs
from overlap_bench.report import plot_chunks
from overlap_bench.report import plot_gantt
from overlap_bench.report import plot_interference
from overlap_bench.report import plot_power
from overlap_bench.report import plot_scaling
from overlap_bench.report import plot_summary

MOST_CHUNKS_DRAWN = 256  # the per-chunk chart of a timeline with more chunks is left out, and the report says so
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
    shown = frame.copy()
    if "unstable" in frame and (frame["unstable"] == 1).any():  # METRICS.md, "Steady state"
        shown["mode"] = [f"{m} (unstable)" if u == 1 else m for m, u in zip(frame["mode"], frame["unstable"])]
        lines += ["Rows marked unstable: the median's 95 % interval over the iterations is wider than +-5 %.", ""]
    is_map = (frame["mode"] == "interference").any()
    columns = [c for c in ob_csv.config_columns(frame) if not (is_map and c == "msg_mb")]
    for config, part in shown.groupby(columns, sort=False, dropna=False) if columns else [("", shown)]:
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
    except ob_tool.UsageError as error:
        raise ob_tool.UsageError(f"{path}: {error}") from None
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
    count = frame.loc[frame["chunk"] >= 0, "chunk"].nunique()
    if count > MOST_CHUNKS_DRAWN:  # a line per chunk: time and memory grow with them (37 s per 1000 chunks)
        lines += [f"Per-chunk chart left out: {count} chunks, more than the {MOST_CHUNKS_DRAWN} one chart shows "
                  "(`plot_chunks.py` draws any of them).", ""]
    elif count:
        chunks = figures / f"{path.stem}.chunks.png"
        plot_chunks.plot(plot_chunks.per_chunk(frame, []), chunks)
        lines += [f"![{chunks.name}](figures/{chunks.name})", ""]
    return lines


COMPARE_COLUMNS = ["contender", "baseline_pick", "median_ms", "median_ci_rel", "ratio", "ratio_ci_lo", "ratio_ci_hi",
                   "verdict"]


def is_comparison(path):
    """compare.csv of ob-compare (overlap_bench/compare/compare.py)."""
    try:
        return {"contender", "ratio", "verdict"} <= set(packs.read_csv(path, nrows=0).columns)
    except Exception:  # noqa: BLE001 - anything unreadable is not one
        return False


def load_comparison(path):
    """ob-compare's table with the columns its section reads, their numbers finite (a usage error naming the file,
    column and row otherwise)."""
    table = packs.read_csv(path)
    missing = [c for c in COMPARE_COLUMNS + ["baseline", "rounds", "unstable"] if c not in table.columns]
    if missing:
        raise ob_tool.UsageError(f"{path}: missing column '{missing[0]}' (not written by ob-compare)")
    for column in ("ratio", "ratio_ci_lo", "ratio_ci_hi", "median_ms", "rounds", "unstable"):
        values = pd.to_numeric(table[column], errors="coerce")
        bad = values.index[~values.apply(lambda v: v == v and abs(v) != float("inf"))]
        if len(bad):
            raise ob_tool.UsageError(f"{path}: column '{column}', row {bad[0] + 1}: '{table[column].iloc[bad[0]]}' is "
                                    "not a finite number")
        table[column] = values
    known = {"faster", "slower", "not resolved", "baseline"}
    unknown = table.index[~table["verdict"].isin(known)]
    if len(unknown):
        value = table["verdict"].iloc[unknown[0]]
        raise ob_tool.UsageError(f"{path}: column 'verdict', row {unknown[0] + 1}: '{value}' "
                                f"is not one of {', '.join(sorted(known))}")
    return table


def comparison_section(path):
    """ob-compare's result: its sentences (ratio, interval, verdict) and table, and its figure where it is beside it.
    Ratios between systems or strategies come only from such interleaved runs, never from summaries of separate
    processes."""
    from overlap_bench.core import compare_stats

    table = load_comparison(path)
    lines = [f"## comparison: {ob_csv.markdown(path.parent.name + '/' + path.name)}", ""]
    lines += [f"- {ob_csv.markdown(compare_stats.sentence(row))}" for _, row in table.iterrows()
              if row["verdict"] != "baseline"]
    for baseline, part in table.groupby("baseline", sort=False):
        factors = [c for c in ("compute_ratio", "overhead_ratio") if c in part and part[c].notna().any()]
        lines += ["", f"**against {ob_csv.markdown(baseline)}**", "", markdown_table(part, COMPARE_COLUMNS + factors)]
    figure = path.with_suffix(".png")
    if figure.is_file():
        lines += ["", f"![{figure.name}]({figure.name})"]
    return lines + [""]


def check_summary(path):
    """Everything a summary section reads, checked before anything is written: the CSV, its metadata, its modes."""
    frame = ob_csv.load_summary(path)
    ob_csv.read_metadata(path)
    try:
        if (frame["mode"] == "interference").any():
            plot_interference.rows(frame)
            return
        plot_summary.bars(frame)
    except ob_tool.UsageError as error:
        raise ob_tool.UsageError(f"{path}: {error}") from None


def _write(directory, csvs, kinds, figures):
    """The figures and report.md of write_report, every CSV already checked."""
    lines = ["# overlap-bench report", "", f"From the CSVs in `{directory}`. Columns: see METRICS.md.", ""]
    for path in csvs:
        if kinds[path] == "summary":
            lines += summary_section(path, figures)
    for path in csvs:
        if kinds[path] is None and is_comparison(path):
            lines += comparison_section(path)
    for path in csvs:
        if kinds[path] == "timeline" and len(packs.read_text(path).splitlines()) > 1:
            lines += timeline_section(path, figures)
    for path in csvs:
        if kinds[path] == "power":  # <stem>.power.csv: shaded where <stem>.timeline.csv has overlapped iterations
            power = figures / f"{path.stem}.png"
            timeline = path.parent / (path.name[: -len(".power.csv")] + ".timeline.csv")
            spans = plot_power.mode_spans(ob_csv.load_timeline(timeline), "overlap") if packs.exists(timeline) else []
            plot_power.plot(ob_csv.load_power(path), power, spans)
            lines += [f"## {path.stem}", "", f"![{power.name}](figures/{power.name})", ""]
    report = directory / "report.md"
    ob_tool.write_text_atomic(report, "\n".join(lines) + "\n")  # whole or not at all
    return report


def write_report(directory):
    directory = pathlib.Path(directory)
    if directory.is_dir() and (directory / "figures").exists() and not (directory / "figures").is_dir():
        raise ob_tool.UsageError(f"{directory / 'figures'}: not a directory (the report draws its figures there)")
    if not directory.is_dir():
        raise ob_tool.UsageError(f"{directory}: not a directory")
    ob_tool.require_outputs([("the report", directory / "report.md")])
    csvs = packs.glob(directory, "*.csv")  # packed ones too (a published folder)
    kinds = {path: ob_csv.kind_of(path) for path in csvs}
    if not any(kinds.values()) and not any(is_comparison(p) for p in csvs):
        raise ob_tool.UsageError(f"{directory}: no overlap-bench CSV (summary or timeline) in it")
    loaders = {"summary": check_summary, "power": ob_csv.load_power,
               # A timeline with its header only (a sweep before sweeps kept their events): nothing to draw.
               "timeline": lambda path: len(packs.read_text(path).splitlines()) > 1 and ob_csv.load_timeline(path)}
    for path, kind in kinds.items():  # every CSV checked before anything is written
        if kind:
            loaders[kind](path)
        elif is_comparison(path):
            load_comparison(path)
    figures = directory / "figures"
    made, before = not figures.exists(), set(figures.iterdir()) if figures.is_dir() else set()
    figures.mkdir(exist_ok=True)
    try:
        report = _write(directory, csvs, kinds, figures)
    except BaseException as error:  # a full disk, any failure: none of the figures this invocation drew left
        for path in set(figures.iterdir()) - before:
            path.unlink(missing_ok=True)
        if made:
            shutil.rmtree(figures, ignore_errors=True)
        if isinstance(error, OSError) and not error.filename:  # the message names where it failed
            raise OSError(error.errno, error.strerror or str(error), str(figures)) from None
        raise
    return report


def main():
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("results_dir", type=ob_tool.input_folder, help="folder holding the CSVs of a run")
    args = parser.parse_args()
    print(write_report(args.results_dir))
    return 0


def cli():
    """The console command (pyproject.toml) and `python3 report.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
