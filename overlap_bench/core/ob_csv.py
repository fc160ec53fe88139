"""Loading and validating overlap-bench CSVs and their metadata; reading one imports no plotting library (the
figures' helpers are figures.py's).

A CSV that lacks a required column, has no rows, or holds something other than a finite number where a number
belongs is a usage error: one line naming the file, the column and the row, exit code 2 (ob_tool's `UsageError`,
turned into the exit code by its `main_guard`). Unknown columns are ignored.
"""
import json
import math
import os
import pathlib

import pandas as pd

from overlap_bench.core import ob_tool
from overlap_bench.core import packs

# The files' columns, declared once in schema.json (the binaries embed the same file when they are built): what a
# reader requires of each kind, which of those hold finite numbers and which a non-empty name. Which columns describe
# the configuration is not kept here: every summary's metadata sidecar lists them ("config_columns").
SCHEMA = json.loads(pathlib.Path(__file__).with_name("schema.json").read_text())
SUMMARY_COLUMNS = SCHEMA["summary"]["required"]
TIMELINE_COLUMNS = SCHEMA["timeline"]["required"]
POWER_COLUMNS = SCHEMA["power"]["required"]
NUMERIC = {kind: SCHEMA[kind]["numeric"] for kind in ("summary", "timeline", "power")}
NAMES = {kind: SCHEMA[kind]["names"] for kind in ("summary", "timeline", "power")}


def _check_numeric(path, frame, columns):
    for column in columns:
        values = pd.to_numeric(frame[column], errors="coerce")
        for index, value in enumerate(values):
            if not math.isfinite(value):
                raise ob_tool.UsageError(f"{path}: column '{column}', row {index + 1}: "
                                         f"'{frame[column].iloc[index]}' is not a finite number")
        frame[column] = values


def stored(path):
    """`path`, or its gzipped copy where only that is kept (a published comparison's runs: results/README.md), loose
    or packed; None where neither is."""
    path = pathlib.Path(path)
    gzipped = path.with_name(path.name + ".gz")
    return path if packs.exists(path) else gzipped if packs.exists(gzipped) else None


def require_ranges(path, frame, ranges):
    """Checks a table's values against their declared kinds before any is used: {column: (least, most, integer)},
    each value a finite number within [least, most] (an integer where `integer`); a usage error naming the file, the
    column, the row and the value otherwise. Returns the frame with those columns numeric."""
    for column, (least, most, integer) in ranges.items():
        values = pd.to_numeric(frame[column], errors="coerce")
        for index, value in enumerate(values):
            if not (math.isfinite(value) and least <= value <= most and (not integer or float(value).is_integer())):
                kind = "an integer" if integer else "a number"
                raise ob_tool.UsageError(f"{path}: column '{column}', row {index + 1}: '{frame[column].iloc[index]}' "
                                         f"is not {kind} in [{least:g}, {most:g}]")
        frame[column] = values.astype(int) if integer else values
    return frame


def _load(path, required, kind):
    path = stored(path) or pathlib.Path(path)
    try:  # a trailing comma on a row is no index column
        frame = packs.read_csv(path, "a CSV", index_col=False, dtype={c: str for c in SCHEMA[kind].get("text", [])})
    except ob_tool.UsageError as error:
        raise ob_tool.UsageError(f"{path}: {str(error).split(' is invalid: ', 1)[-1]}") from None
    for column in required:
        if column not in frame.columns:
            raise ob_tool.UsageError(f"{path}: missing required column '{column}'")
    if frame.empty:
        raise ob_tool.UsageError(f"{path}: no rows")
    _check_numeric(path, frame, NUMERIC[kind])
    for column in NAMES[kind]:
        empty = frame.index[frame[column].isna() | (frame[column].astype(str).str.strip() == "")]
        if len(empty):
            raise ob_tool.UsageError(f"{path}: column '{column}', row {empty[0] + 1}: empty (a name is needed)")
        frame[column] = frame[column].astype(str)
    return frame


def meta_path(path):
    """The metadata sidecar of a summary CSV: <stem>.meta.json."""
    path = pathlib.Path(path)
    return path.with_name((path.name[:-4] if path.name.endswith(".csv") else path.name) + ".meta.json")


def _declared_config_columns(path):
    """The configuration columns the summary's metadata names; none without a readable sidecar."""
    try:
        meta = packs.read_json(meta_path(path), "a metadata sidecar", schema="meta")
    except (OSError, ob_tool.UsageError):
        return []
    columns = meta.get("config_columns", []) if isinstance(meta, dict) else []
    return [c for c in columns if isinstance(c, str)]


def load_summary(path):
    """A summary CSV with its required columns checked; frame.attrs["config_columns"] holds the configuration
    columns its metadata declares."""
    frame = _load(path, SUMMARY_COLUMNS, "summary")
    frame.attrs["config_columns"] = _declared_config_columns(path)
    return frame


def concat_summaries(frames):
    """Summaries side by side in one frame, their declared configuration columns united."""
    declared = []
    for frame in frames:
        declared += [c for c in frame.attrs.get("config_columns", []) if c not in declared]
    joined = pd.concat(frames, ignore_index=True)
    joined.attrs["config_columns"] = declared
    return joined


def load_timeline(path):
    """A timeline CSV with its required columns checked; adds duration_us (never negative). `point` names the sweep
    point of each event ("" outside a sweep, and in files written before sweeps kept their events)."""
    frame = _load(path, TIMELINE_COLUMNS, "timeline")
    frame["point"] = frame["point"].fillna("").astype(str) if "point" in frame.columns else ""
    frame["duration_us"] = frame["end_us"] - frame["start_us"]
    backwards = frame.index[frame["duration_us"] < 0]
    if len(backwards):
        raise ob_tool.UsageError(f"{path}: row {backwards[0] + 1}: end_us is before start_us")
    return frame


def timeline_points(frame):
    """The sweep points of a timeline in the order they ran ([""] outside a sweep)."""
    return list(dict.fromkeys(frame.sort_values("start_us")["point"])) if len(frame) else [""]


def load_power(path):
    """A power CSV (phase 4 --power) with its required columns checked."""
    frame = _load(path, POWER_COLUMNS, "power")
    negative = frame.index[frame["power_w"] < 0]
    if len(negative):
        raise ob_tool.UsageError(f"{path}: row {negative[0] + 1}: power_w is negative")
    return frame


def config_columns(frame):
    """The declared configuration columns present in `frame` that vary, plus phase. A column some rows lack (one
    system's own knob when systems are drawn side by side) does not tell configurations apart."""
    declared = frame.attrs.get("config_columns", [])
    present = [c for c in declared if c in frame.columns and c != "system" and frame[c].notna().all()]
    return [c for c in present if c == "phase" or frame[c].nunique() > 1]


def config_label(row, columns):
    """'hidden=4096 layers=16 batch=512' for the columns that identify a configuration."""
    parts = []
    for column in columns:
        if column in ("phase", "system"):
            continue
        value = row[column]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        parts.append(f"{column}={value}")
    return " ".join(parts) or str(row.get("phase", ""))


def kind_of(path):
    """'summary', 'timeline', 'power' or None from a CSV's header (None for what is not a regular file: a FIFO
    would block the read)."""
    try:
        header = packs.read_csv(path, "a CSV", nrows=0).columns
    except (OSError, ob_tool.UsageError):
        return None
    if all(c in header for c in TIMELINE_COLUMNS):
        return "timeline"
    if all(c in header for c in POWER_COLUMNS):
        return "power"
    if all(c in header for c in SUMMARY_COLUMNS):
        return "summary"
    return None


def hardware_line(meta):
    """'2 x NVIDIA H200, commit 8707c0d3aa48' from a run's metadata ('' without one): what the figure was measured
    on."""
    if not meta:
        return ""
    gpus = meta.get("gpus") if isinstance(meta.get("gpus"), list) else []
    names = sorted({g.get("gpu_name") for g in gpus if isinstance(g, dict) and g.get("gpu_name")})
    ranks = meta.get("ranks", 1)
    if names:
        what = f"{ranks} x {' + '.join(names)}"
    else:
        what = f"{ranks} rank(s) on {meta.get('cpu_model', 'CPU')}"
    hosts = meta.get("hosts") if isinstance(meta.get("hosts"), list) else []
    if len(set(hosts)) > 1:
        what += f", {len(set(hosts))} hosts"
    return f"{what}, commit {meta.get('commit', 'unknown')}"


def timeline_metadata(timeline_path):
    """The metadata of the run that wrote `<stem>.timeline.csv` (its summary's sidecar, <stem>.meta.json)."""
    path = pathlib.Path(timeline_path)
    name = path.name[: -len(".timeline.csv")] if path.name.endswith(".timeline.csv") else path.stem
    return read_metadata(path.with_name(name + ".csv"))


def read_metadata(summary_path):
    """The summary's metadata sidecar as a dict ({} when there is none); a sidecar that is not a JSON object is a
    usage error naming it."""
    path = meta_path(summary_path)
    if not os.path.lexists(path) and not packs.exists(path):  # a folder or FIFO of its name is refused, not skipped
        return {}
    try:
        meta = packs.read_json(path, "a metadata sidecar", 64 << 20, schema="meta")
    except OSError as error:
        raise ob_tool.UsageError(f"{path}: unreadable metadata ({str(error).splitlines()[0]})") from None
    if not isinstance(meta, dict):
        raise ob_tool.UsageError(f"{path}: metadata must be a JSON object")
    return meta


def markdown(text):
    """Text safe inside a Markdown table cell or line: pipes escaped, HTML neutralised, one line."""
    text = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(text.split())


if __name__ == "__main__":  # a library of the other scripts, not a command: say so
    print(__doc__.strip() + "\n\nA module the plotting and report scripts import; it has no command line of its own.")
