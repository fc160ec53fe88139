"""Nsight Systems' SQLite export (`nsys export --type sqlite`) read into a RankTrace: its kernels
(CUPTI_ACTIVITY_KIND_KERNEL, names from StringIds), the runtime calls that launched them, and NVTX ranges named
ProfilerStep#N (and ob_compute_only) where the job marked them. A hostile file is bounded: opened read-only and
immutable, every table read must be a table (a view, whose query may recurse without end, is refused), and a
progress handler stops any query past a budget of SQLite's steps that grows with the file's size. Its path is given to
SQLite as a file: URI with every character percent-encoded ('#' and '?' are a URI's, and would open another file), and
each value is checked to be of its kind before use (a time a finite number, an id a whole one, a step's number decimal
digits): a usage error naming the table, column and value otherwise."""
import math
import pathlib
import re
import sqlite3

from overlap_bench.core import ob_tool
from overlap_bench.trace import trace_formats
from overlap_bench.trace.trace_model import COMPUTE_ONLY, Kernel, RankTrace

TABLES = ("StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME")
OPTIONAL = ("NVTX_EVENTS",)
# SQLite virtual-machine steps a query may take per byte of the file (a scan takes a few per row; a recursive or
# cross-joined query would take without end), and the progress handler's period.
STEPS_PER_BYTE = 64
PERIOD = 10000
# The profiler's step ranges (the prefix in any case, as the query's LIKE matches it): their numbers decimal digits.
STEP_NAME = re.compile(r"(?i:ProfilerStep)#([0-9]{1,18})")
KERNEL = (("start", "time"), ("end", "time"), ("shortName", None), ("streamId", "id"), ("gridX", None),
          ("blockX", None), ("correlationId", "id"), ("deviceId", "id"))
RUNTIME = (("start", "time"), ("correlationId", "id"))
NVTX = (("start", "time"), ("end", "time"), ("text", None))


def _checked(rows, columns, table, path):
    """The rows of `table`, each value checked against its column's kind ("time": a finite number, "id": a whole
    number, None: taken as it is): a usage error naming the file, table, column and value otherwise."""
    for row in rows:
        for value, (column, kind) in zip(row, columns):
            fits = kind is None or isinstance(value, int) or (
                kind == "time" and isinstance(value, float) and math.isfinite(value))
            if not fits:
                what = "a number (ns)" if kind == "time" else "a whole number"
                raise ob_tool.UsageError(f"{path}: not an Nsight Systems SQLite export ({table}: "
                                         f"{column} {repr(value)[:40]} is not {what})")
        yield row


def _guarded(path):
    """The export opened read-only, its tables checked to be tables, queries bounded."""
    size = ob_tool.require_input(path, "TRACE").stat().st_size
    db = sqlite3.connect(pathlib.Path(path).resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
    db.execute("PRAGMA trusted_schema = OFF")  # no function a schema names runs
    budget = [max(STEPS_PER_BYTE * size // PERIOD, 10000)]

    def progress():
        budget[0] -= 1
        return budget[0] < 0  # non-zero: the query is interrupted

    db.set_progress_handler(progress, PERIOD)
    kinds = dict(db.execute("SELECT name, type FROM sqlite_master WHERE name IN (%s)" %
                            ",".join("?" * len(TABLES + OPTIONAL)), TABLES + OPTIONAL))
    for name in TABLES + OPTIONAL:
        if name in kinds and kinds[name] != "table":
            raise sqlite3.DatabaseError(f"{name} is a {kinds[name]}, not a table")
    return db, kinds


def read_nsys(path):
    """Nsight Systems' SQLite export as one RankTrace; a usage error naming the file where it is not one."""
    from overlap_bench.trace.trace_read import set_apart_compute_only

    try:
        db, kinds = _guarded(path)
        names = dict(db.execute("SELECT id, value FROM StringIds"))
        trace = RankTrace(str(path), rank=0, world=1)
        rows = db.execute("SELECT start, end, shortName, streamId, gridX, blockX, correlationId, deviceId "
                          "FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start")
        for start, end, name, stream, grid, block, correlation, device in _checked(
                rows, KERNEL, "CUPTI_ACTIVITY_KIND_KERNEL", path):
            trace.kernels.append(Kernel(start / 1e3, end / 1e3, names.get(name, str(name)), stream,
                                        f"{grid}x{block}", correlation))
            trace.rank = device
        rows = db.execute("SELECT start, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME")
        for start, correlation in _checked(rows, RUNTIME, "CUPTI_ACTIVITY_KIND_RUNTIME", path):
            trace.launches[correlation] = start / 1e3
        if "NVTX_EVENTS" in kinds:
            try:
                rows = db.execute("SELECT start, end, text FROM NVTX_EVENTS WHERE text LIKE 'ProfilerStep#%' OR "
                                  "text = ?", (COMPUTE_ONLY,))
                for start, end, text in _checked(rows, NVTX, "NVTX_EVENTS", path):
                    if text == COMPUTE_ONLY:
                        trace.compute_only.append((start / 1e3, end / 1e3))
                        continue
                    step = STEP_NAME.fullmatch(text) if isinstance(text, str) else None
                    if not step:
                        raise ob_tool.UsageError(f"{path}: not an Nsight Systems SQLite export (NVTX range "
                                                 f"{text[:40]!r}: a step's number is decimal digits)")
                    trace.steps.append((int(step.group(1)), start / 1e3, end / 1e3))
            except sqlite3.OperationalError as error:
                if "interrupted" in str(error):
                    raise
        db.close()
        set_apart_compute_only(trace)
    except sqlite3.DatabaseError as error:
        reason = "a query ran past its budget" if "interrupted" in str(error) else str(error)
        raise ob_tool.UsageError(f"{path}: not an Nsight Systems SQLite export ({reason})") from None
    return [trace]


trace_formats.register("nsys-sqlite", lambda head, path: head.startswith(b"SQLite format 3\0"), read_nsys)
