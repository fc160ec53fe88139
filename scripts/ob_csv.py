"""Loading and validating overlap-bench CSVs, shared by every plotting and report script.

A CSV that lacks a required column or has no rows is a usage error: one line naming the file and the column,
exit code 2 (`UsageError`, raised here and turned into the exit code by `main_guard`). Unknown columns are ignored.
"""
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")  # never needs a display

import pandas as pd  # noqa: E402

SUMMARY_COLUMNS = ["system", "phase", "mode", "ranks", "chunks", "iters", "time_ms_p50", "time_ms_p95",
                   "time_ms_min", "time_ms_max"]
TIMELINE_COLUMNS = ["rank", "lane", "name", "iter", "chunk", "start_us", "end_us"]
POWER_COLUMNS = ["rank", "gpu", "t_us", "power_w"]
# The configuration columns that tell one configuration from another, where a CSV has them.
CONFIG_COLUMNS = ["system", "phase", "workload", "variant", "kernel", "hidden", "layers", "batch", "in", "out",
                  "bucket_mb", "first_bucket_mb", "chunks", "buckets", "nccl_max_ctas", "comm_priority", "ranks",
                  "device", "compute_ms", "comm_ms", "chunk_rows", "virtual_ranks", "tf32"]


class UsageError(Exception):
    """Bad input: the message is one line; the exit code is 2."""


def _load(path, required):
    path = pathlib.Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise UsageError(f"{path}: empty file (no header)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: not a CSV ({str(error).splitlines()[0]})") from None
    for column in required:
        if column not in frame.columns:
            raise UsageError(f"{path}: missing required column '{column}'")
    if frame.empty:
        raise UsageError(f"{path}: no rows")
    return frame


def load_summary(path):
    """A summary CSV with its required columns checked."""
    return _load(path, SUMMARY_COLUMNS)


def load_timeline(path):
    """A timeline CSV with its required columns checked; adds duration_us."""
    frame = _load(path, TIMELINE_COLUMNS)
    frame["duration_us"] = frame["end_us"] - frame["start_us"]
    return frame


def load_power(path):
    """A power CSV (phase 4 --power) with its required columns checked."""
    return _load(path, POWER_COLUMNS)


def config_columns(frame):
    """The configuration columns present in `frame` that vary, plus phase. A column some rows lack (one system's
    own knob when systems are drawn side by side) does not tell configurations apart."""
    present = [c for c in CONFIG_COLUMNS if c in frame.columns and c != "system" and frame[c].notna().all()]
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
    """'summary', 'timeline', 'power' or None from a CSV's header."""
    try:
        header = pd.read_csv(path, nrows=0).columns
    except Exception:  # noqa: BLE001 - anything unreadable is not one of ours
        return None
    if all(c in header for c in TIMELINE_COLUMNS):
        return "timeline"
    if all(c in header for c in POWER_COLUMNS):
        return "power"
    if all(c in header for c in SUMMARY_COLUMNS):
        return "summary"
    return None


def main_guard(function):
    """Runs a script's main: UsageError -> one line on stderr and exit 2."""
    try:
        return function()
    except UsageError as error:
        print(f"{pathlib.Path(sys.argv[0]).name}: error: {error}", file=sys.stderr)
        return 2
