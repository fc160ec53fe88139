#!/usr/bin/env python3
"""Numbers in Markdown come from data: rewrites every generated block of the given Markdown files from the files it
names, or with --check says which blocks differ from what their data gives (exit 1) and writes nothing.

A block is written between two comments, its arguments relative to the Markdown file's folder:
  <!-- generated: summary CSV [modes=seq,overlap] [columns=time_ms_p50,speedup] -->   rows of a summary CSV
  <!-- generated: overlaps GLOB [where=bucket_mb:25] [columns=...] [only=fastest] -->  every overlapped row of
                                             those summaries, the fastest per configuration marked (or alone)
  <!-- generated: table CSV [columns=a,b] -->  any CSV's rows (a derived table, e.g. a run set beside another)
  <!-- generated: modes GLOB [modes=seq,overlap] [columns=overlap_pct,thread.overlap_pct] [by=sync,bucket_mb] -->
                                             one row per summary (per point of a sweep: the by= columns, shown
                                             too): each mode's median and the overlapped (or a named) row's metrics
  <!-- generated: pivot GLOB rows=a,b columns=c values=d,e [where=mode:x] -->  rows laid out by c, each cell
                                             d / e (rows=file: one row per file)
  <!-- generated: compare CSV -->            an ob-compare result: its ratios, intervals and verdicts in words
  <!-- generated: verdict CSV [CSV ...] -->  the main job's sentences for those summaries (verdict.py)
  <!-- generated: excerpt FILE from=TEXT lines=N -->  N lines of a log from the first line holding TEXT
  <!-- generated: index -->                  every published results folder: hardware, commits, dates
  <!-- generated: json FILE keys=a,b.c -->   named keys of a JSON file (a run's metadata), one row each
  <!-- generated: headline CSV -->           ob-headline's sentences, one per configuration of its headline.csv
  ...
  <!-- /generated -->
The markers are parsed strictly: a block opened inside another, a close without an open, or an open never closed
is a usage error (exit 2) naming the file and line, and nothing is written; so is a block whose arguments its kind
cannot use. A Markdown file that is a symbolic link is written through (its target replaced, the link kept).
Usage: md_generate.py [--check] FILE.md [...]"""
import pathlib


from overlap_bench.core import ob_csv


from overlap_bench.core import ob_tool
from overlap_bench.core import md_blocks
from overlap_bench.core.md_blocks import blocks, options
from overlap_bench.core import packs

SUMMARY_COLUMNS = ["mode", "time_ms_p50", "time_ms_p95", "time_ms_p50_ci_rel", "speedup", "overlap_pct",
                   "compute_slowdown"]


def source(base, name):
    path = (base / name).resolve()
    if not path.is_file():
        raise ob_tool.UsageError(f"{base / name}: no such file (named by a generated block)")
    return path


def summary_block(base, plain, keyed):
    from overlap_bench.report import report

    frame = ob_csv.load_summary(source(base, plain[0]))
    if "modes" in keyed:
        frame = frame[frame["mode"].isin(keyed["modes"].split(","))]
    columns = keyed["columns"].split(",") if "columns" in keyed else SUMMARY_COLUMNS
    if "mode" not in columns:
        columns = ["mode"] + columns
    return report.markdown_table(frame, columns)


def table_block(base, plain, keyed):
    from overlap_bench.report import report

    frame = packs.read_csv(source(base, plain[0]), "a table block")
    columns = keyed["columns"].split(",") if "columns" in keyed else list(frame.columns)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ob_tool.UsageError(f"{base / plain[0]}: no column {', '.join(missing)} (named by a generated block)")
    return report.markdown_table(frame, columns)


def compare_block(base, plain, _keyed):
    from overlap_bench.report import report

    lines = report.comparison_section(source(base, plain[0]))
    return "\n".join(line for line in lines[2:] if not line.startswith("![")).strip()


def verdict_block(base, plain, _keyed):
    from overlap_bench.report import verdict

    lines = []
    for name in plain:
        path = source(base, name)
        meta = ob_csv.read_metadata(path)
        cores = meta.get("cores") if isinstance(meta.get("cores"), int) else None
        lines += verdict.verdict(path, cores)
    return "\n".join(f"- {line.strip()}" if not line.startswith("  ") else f"  - {line.strip()}" for line in lines)


def excerpt_block(base, plain, keyed):
    text = ob_tool.read_small(source(base, plain[0]), "excerpt").splitlines()
    start = next((i for i, line in enumerate(text) if keyed.get("from", "") in line), None)
    if start is None:
        raise ob_tool.UsageError(f"{plain[0]}: no line holds '{keyed.get('from')}'")
    count = int(keyed.get("lines", "20"))
    if not 1 <= count <= 10000:
        raise ob_tool.UsageError(f"{plain[0]}: lines={count} is invalid: 1 to 10000 lines")
    return "```\n" + "\n".join(text[start:start + count]) + "\n```"


def index_block(base, _plain, _keyed):
    """One row per folder of published results that holds metadata: hardware, commits and dates, from the files."""
    rows = []
    found = packs.rglob(base, "*.meta.json")  # packed ones too (packs.py)
    for folder in sorted({p.parent for p in found}):
        if (relative := folder.relative_to(base)).parts[:1] == ("runs",):
            continue
        metas = []
        for path in (p for p in found if p.parent == folder):
            try:
                meta = packs.read_json(path, "an index block's metadata", schema="meta")
            except ob_tool.UsageError:
                continue
            if isinstance(meta, dict):
                metas.append(meta)
        if not metas:
            continue
        hardware = sorted({ob_csv.hardware_line(m).rsplit(", commit", 1)[0] for m in metas} - {""})
        commits = sorted({str(m.get("commit", "unknown")) for m in metas})
        dates = sorted(str(m.get("date_utc", ""))[:10] for m in metas if m.get("date_utc"))
        span = dates[0] if dates and dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}" if dates else ""
        rows.append(f"| [{relative}]({relative}) | {len(metas)} | {ob_csv.markdown('; '.join(hardware))} | "
                    f"{ob_csv.markdown(', '.join(commits))} | {span} |")
    return "\n".join(["| folder | runs | hardware | commits | dates |", "|---|---|---|---|---|"] + rows)


def overlaps_block(base, plain, keyed):
    """The overlapped rows of every summary a glob names, side by side; the fastest of each configuration in bold.
    Each row is its own process's median: a ranking within a spread of a few percent is not resolved (ob-compare)."""
    from overlap_bench.report import report

    paths = sorted({p for pattern in plain for p in md_blocks.glob(base, pattern)})
    if not paths:
        raise ob_tool.UsageError(f"{base}: no file matches {' '.join(plain)}")
    frame = ob_csv.concat_summaries([ob_csv.load_summary(p) for p in paths])
    frame = frame[frame["mode"] == "overlap"].copy()
    if "where" in keyed:
        column, value = keyed["where"].split(":", 1)
        frame = frame[frame[column].astype(str).isin([value, f"{float(value):g}", str(float(value))])]
    key = ["hidden", "layers", "batch"]
    frame["configuration"] = frame[key].astype(int).astype(str).agg(",".join, axis=1)
    fastest = frame.groupby("configuration")["time_ms_p50"].transform("min") == frame["time_ms_p50"]
    frame["fastest"] = ["yes" if f else "" for f in fastest]
    if keyed.get("only") == "fastest":
        frame = frame[fastest]
    columns = keyed.get("columns", "configuration,sync,time_ms_p50,time_ms_p50_ci_rel,compute_slowdown,fastest")
    return report.markdown_table(frame.sort_values(["configuration", "time_ms_p50"]), columns.split(","))


def pivot_block(base, plain, keyed):
    """Rows of the CSVs a glob names (where= filters) laid out as rows= by columns=: each cell the values= columns
    joined by " / " (4 significant digits), e.g. an interference map's slowdown and stretch per strategy and size."""
    import pandas as pd
    from overlap_bench.report import report

    paths = sorted({p for pattern in plain for p in md_blocks.glob(base, pattern)})
    if not paths:
        raise ob_tool.UsageError(f"{base}: no file matches {' '.join(plain)}")
    # rows=file: per file
    frame = pd.concat([packs.read_csv(p, "a pivot block").assign(file=p.stem) for p in paths], ignore_index=True)
    rows, values = keyed.get("rows", "").split(","), keyed.get("values", "").split(",")
    across = keyed.get("columns", "")
    missing = [c for c in rows + values + [across] + ([keyed["where"].split(":", 1)[0]] if "where" in keyed else [])
               if c not in frame.columns]
    if missing:
        raise ob_tool.UsageError(f"{base}: no column {', '.join(missing)} (named by a pivot block)")
    if "where" in keyed:
        column, value = keyed["where"].split(":", 1)
        frame = frame[frame[column].astype(str) == value]

    def text(value):
        return f"{value:.4g}" if isinstance(value, float) else str(value)

    frame = frame.assign(cell=[" / ".join(text(v) for v in row) for row in frame[values].itertuples(index=False)])
    table = frame.pivot_table(index=rows, columns=across, values="cell", aggfunc="first", sort=False)
    table = table[sorted(table.columns, key=lambda c: (isinstance(c, str), c))]  # numbers in order, then names
    table.columns = [f"{across} {text(c)}" for c in table.columns]
    table = table.reset_index()
    return report.markdown_table(table, list(table.columns))


def modes_block(base, plain, keyed):
    """One row per summary a glob names: its configuration, each named mode's median (ms) and the overlapped row's
    named metrics. Rows of one run side by side; nothing divided across runs."""
    import pandas as pd
    from overlap_bench.report import report

    paths = sorted({p for pattern in plain for p in md_blocks.glob(base, pattern)})
    if not paths:
        raise ob_tool.UsageError(f"{base}: no file matches {' '.join(plain)}")
    modes = keyed.get("modes", "seq,overlap,ideal,bound").split(",")
    metrics = [m for m in keyed.get("columns", "").split(",") if m]
    by = [b for b in keyed.get("by", "").split(",") if b]
    rows = []
    for path in paths:
        whole = ob_csv.load_summary(path)
        missing = [b for b in by if b not in whole.columns]
        if missing:
            raise ob_tool.UsageError(f"{path}: no column {', '.join(missing)} (named by by=)")
        # One row per point of a sweep: the rows that share the by= columns' values.
        for _, part in (whole.groupby(by, sort=False, dropna=False) if by else [(None, whole)]):
            if part["mode"].duplicated().any():
                raise ob_tool.UsageError(f"{path}: a mode appears twice in one point; name the sweep's column in by=")
            frame = part.set_index("mode")
            head = frame.iloc[0]
            shape = ("hidden", "layers", "batch")
            row = {"configuration": ",".join(str(int(head[k])) for k in shape) if all(k in frame for k in shape)
                   else path.stem}  # phases without phase 4's model: the file names the run
            row.update({b: head[b] for b in by})
            for mode in modes:
                row[f"{mode}_ms"] = frame.loc[mode, "time_ms_p50"] if mode in frame.index else float("nan")
            for metric in metrics:  # the overlapped row's, or MODE.COLUMN: that mode's row's
                mode, _, column = metric.rpartition(".")
                mode = mode or "overlap"
                row[metric] = frame.loc[mode, column] if mode in frame.index and column in frame else float("nan")
            rows.append(row)
    table = pd.DataFrame(rows)
    return report.markdown_table(table, list(table.columns))


def json_block(base, plain, keyed):
    """Named keys of a JSON file (dotted for nested ones), a row each: key, value (lists joined by spaces)."""
    data = packs.read_json(source(base, plain[0]), "a json block")
    rows = ["| key | value |", "|---|---|"]
    for key in keyed["keys"].split(","):
        value = data
        for part in key.split("."):
            if not isinstance(value, dict) or part not in value:
                raise ob_tool.UsageError(f"{base / plain[0]}: no key '{key}' (named by a json block)")
            value = value[part]
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        elif isinstance(value, float):
            value = f"{value:.4g}"
        rows.append(f"| {ob_csv.markdown(key)} | {ob_csv.markdown(value)} |")
    return "\n".join(rows)


def headline_block(base, plain, _keyed):
    from overlap_bench.compare import headline_tables

    table = packs.read_csv(source(base, plain[0]), "a block")
    return "\n".join(f"- {ob_csv.markdown(headline_tables.sentence(row))}" for _, row in table.iterrows())


KINDS = {"json": json_block, "headline": headline_block, "pivot": pivot_block, "modes": modes_block,
         "overlaps": overlaps_block, "summary": summary_block, "table": table_block, "compare": compare_block,
         "verdict": verdict_block, "excerpt": excerpt_block, "index": index_block}


def render(markdown_path, text):
    """The text with every block's body made again from its data."""
    base = pathlib.Path(markdown_path).resolve().parent
    lines = text.split("\n")
    out, last = [], 0
    for start, end, spec in blocks(markdown_path, lines):
        words = md_blocks.words(f"{markdown_path}:{start + 1}", spec)
        if not words or words[0] not in KINDS:
            raise ob_tool.UsageError(f"{markdown_path}:{start + 1}: unknown generated block '{spec}' "
                                    f"(one of: {', '.join(KINDS)})")
        plain, keyed = options(words[1:])
        if words[0] != "index" and not plain:
            raise ob_tool.UsageError(f"{markdown_path}:{start + 1}: '{spec}' is invalid: {words[0]} names its file")
        try:
            body = KINDS[words[0]](base, plain, keyed)
        except (IndexError, KeyError, ValueError, TypeError) as error:
            raise ob_tool.UsageError(f"{markdown_path}:{start + 1}: '{spec}' is invalid: {words[0]} cannot use "
                                    f"these arguments ({type(error).__name__}: {error})") from None
        out += lines[last:start + 1] + body.rstrip("\n").split("\n")
        last = end
    return "\n".join(out + lines[last:])


def main():
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 where a block differs")
    parser.add_argument("files", nargs="+", type=ob_tool.input_file, help="Markdown files")
    args = parser.parse_args()
    stale, rendered = [], []
    for name in args.files:
        path = pathlib.Path(name)
        if path.suffix.lower() != ".md":
            raise ob_tool.UsageError(f"{path}: not a Markdown file (.md)")
        try:
            text = ob_tool.require_input(path, "a Markdown file", 16 << 20).read_text()
        except UnicodeDecodeError:
            raise ob_tool.UsageError(f"{path}: not text (UTF-8)") from None
        rendered.append((path, text, render(path, text)))  # every file checked before any is written
    for path, text, generated in rendered:
        if generated != text:
            stale.append(path)
            if not args.check:
                ob_tool.write_text_atomic(path.resolve(), generated)  # through a link: its target replaced
    for path in stale:
        print(f"{path}: {'differs from its data' if args.check else 'regenerated'}")
    return 1 if args.check and stale else 0


def cli():
    """The console command ob-md (pyproject.toml) and `python3 md_generate.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
