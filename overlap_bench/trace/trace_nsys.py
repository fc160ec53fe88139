"""Nsight Systems' SQLite export (`nsys export --type sqlite`) read into a RankTrace: its kernels
(CUPTI_ACTIVITY_KIND_KERNEL, names from StringIds), the runtime calls that launched them, and NVTX ranges named
ProfilerStep#N (and ob_compute_only) where the job marked them. A hostile file is bounded: opened read-only and
immutable, every table read must be a table (a view, whose query may recurse without end, is refused), and a
progress handler stops any query past a budget of SQLite's steps that grows with the file's size."""
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


def _guarded(path):
    """The export opened read-only, its tables checked to be tables, queries bounded."""
    size = ob_tool.require_input(path, "TRACE").stat().st_size
    db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
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
        for start, end, name, stream, grid, block, correlation, device in rows:
            trace.kernels.append(Kernel(start / 1e3, end / 1e3, names.get(name, str(name)), stream,
                                        f"{grid}x{block}", correlation))
            trace.rank = device
        for start, correlation in db.execute("SELECT start, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
            trace.launches[correlation] = start / 1e3
        if "NVTX_EVENTS" in kinds:
            try:
                for start, end, text in db.execute("SELECT start, end, text FROM NVTX_EVENTS WHERE text LIKE "
                                                   "'ProfilerStep#%' OR text = ?", (COMPUTE_ONLY,)):
                    if text == COMPUTE_ONLY:
                        trace.compute_only.append((start / 1e3, end / 1e3))
                    else:
                        trace.steps.append((int(text.split("#", 1)[1]), start / 1e3, end / 1e3))
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
