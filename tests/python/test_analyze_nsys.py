"""ob-analyze on Nsight Systems' SQLite export (`nsys export --type sqlite`), built here with the tables and columns
the reader takes (StringIds, CUPTI_ACTIVITY_KIND_KERNEL and _RUNTIME, NVTX_EVENTS; times in ns): the steps from the
NVTX ranges ProfilerStep#N, the compute-only steps from the ranges ob_compute_only, and the numbers the same trace
gives as the profiler's JSON (test_analyze.two_steps)."""
import math
import sqlite3

from overlap_bench.trace import trace_read, trace_stats
from test_analyze import analyze


def nsys(path, kernels, ranges):
    """kernels: (start us, duration us, name); ranges: (start us, end us, text). Each kernel launched 1 us after the
    start of the range that holds it."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, shortName INT, streamId INT, gridX INT, "
               "blockX INT, correlationId INT, deviceId INT)")
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, correlationId INT)")
    db.execute("CREATE TABLE NVTX_EVENTS (start INT, end INT, text TEXT)")
    names = sorted({name for _, _, name in kernels})
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", list(enumerate(names)))
    for i, (start, dur, name) in enumerate(kernels):
        host = next(a for a, b, text in ranges if text.startswith("ProfilerStep") and a <= start < b) + 1
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, 8, 128, ?, 0)",
                   (int(start * 1e3), int((start + dur) * 1e3), names.index(name), 9 if "nccl" in name else 7, i))
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?)", (int(host * 1e3), i))
    db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?)", [(int(a * 1e3), int(b * 1e3), t) for a, b, t in ranges])
    db.commit()
    db.close()
    return path


def test_an_nsys_export_gives_the_steps_and_the_compute_only_baseline(tmp_path):
    """Two compute-only steps (a GEMM 9 us) and two of the job's (the GEMM 10 us alone, 13 us beside a 20 us
    all-reduce): the job's steps are the two, 7 us of the all-reduce exposed, the GEMMs 1 and 4 us slower than
    compute-only; without the ob_compute_only ranges all four are steps and the lone instances the baseline."""
    kernels, ranges = [], []
    for n, start in enumerate((0.0, 1000.0, 2000.0, 3000.0)):
        ranges.append((start, start + 100, f"ProfilerStep#{n}"))
        if n < 2:
            kernels += [(start + 5, 9, "gemm"), (start + 25, 9, "gemm")]
            ranges.append((start + 0.5, start + 50, trace_read.COMPUTE_ONLY))
        else:
            kernels += [(start + 5, 10, "gemm"), (start + 25, 13, "gemm"), (start + 25, 20, "ncclDevKernel_AllReduce")]
    trace = trace_read.read(nsys(tmp_path / "job.sqlite", kernels, ranges))[0]
    assert [n for n, _, _ in trace.steps] == [2, 3] and len(trace.kernels) == 6
    stats = trace_stats.step_stats(trace)
    assert [s.step for s in stats] == [2, 3]
    assert math.isclose(stats[0].exposed_ms, 0.007) and math.isclose(stats[0].slowdown_ms, 0.005)
    result = analyze(tmp_path / "job.sqlite", "--out", tmp_path / "a")
    assert result.returncode == 0, result.stderr
    assert "against the job's compute-only steps in the trace" in result.stdout
    plain = trace_read.read(nsys(tmp_path / "plain.sqlite", kernels, [r for r in ranges if r[2].startswith("P")]))[0]
    stats = trace_stats.step_stats(plain)
    assert len(stats) == 4 and math.isclose(stats[2].slowdown_ms, 0.004)  # 13 us against the lone instances' median, 9
    bad = tmp_path / "bad.sqlite"
    sqlite3.connect(bad).execute("CREATE TABLE t (x)").connection.close()
    result = analyze(bad, "--out", tmp_path / "b")
    assert result.returncode == 2 and "not an Nsight Systems SQLite export" in result.stderr


def one_step(tmp_path, name, change=""):
    """A valid export of one step (a GEMM and an all-reduce) at tmp_path/name, its tables then changed by the SQL
    statement `change`."""
    path = nsys(tmp_path / name, [(5, 9, "gemm"), (25, 20, "ncclDevKernel_AllReduce")], [(0, 100, "ProfilerStep#0")])
    if change:
        db = sqlite3.connect(path)
        db.execute(change)
        db.commit()
        db.close()
    return path


def test_an_export_s_values_are_checked_before_use(tmp_path):
    """Round 5, A50 and A51: text or NULL in a kernel's start or end, a launch's time as text, a step range whose
    number is not decimal digits, a NULL end of a step: each a usage error (one line, exit 2, no traceback) naming
    the table and the column, never a TypeError or ValueError."""
    kernel = "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "
    cases = {"CUPTI_ACTIVITY_KIND_KERNEL: start 'abc' is not": kernel + "start = 'abc' WHERE correlationId = 0",
             "CUPTI_ACTIVITY_KIND_KERNEL: end None is not": kernel + "end = NULL WHERE correlationId = 0",
             "CUPTI_ACTIVITY_KIND_KERNEL: correlationId 1.5 is not": kernel + "correlationId = 1.5",
             "CUPTI_ACTIVITY_KIND_RUNTIME: start 'x' is not": "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 'x'",
             "NVTX_EVENTS: end None is not": "UPDATE NVTX_EVENTS SET end = NULL",
             "'ProfilerStep#x'": "INSERT INTO NVTX_EVENTS VALUES (0, 10, 'ProfilerStep#x')",
             "'ProfilerStep#1 '": "INSERT INTO NVTX_EVENTS VALUES (0, 10, 'ProfilerStep#1 ')"}
    for k, (said, change) in enumerate(cases.items()):
        result = analyze(one_step(tmp_path, f"bad{k}.sqlite", change), "--out", tmp_path / f"o{k}")
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, (said, result.stderr)
        assert "not an Nsight Systems SQLite export" in result.stderr and said in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    # A step's number in the profiler's own form is read, its prefix in any case as before.
    trace = trace_read.read(one_step(tmp_path, "lower.sqlite", "UPDATE NVTX_EVENTS SET text = 'profilerstep#7'"))[0]
    assert [n for n, _, _ in trace.steps] == [7]


def test_a_path_with_a_uri_s_characters_is_the_file_it_names(tmp_path):
    """Round 5, A52: '#' and '?' in the path are the file's name, not a URI's fragment or query (SQLite would open,
    and create, 'run' instead); '%' too. Read like the same file under a plain name, and no other file made."""
    plain = trace_read.read(one_step(tmp_path, "ok.sqlite"))[0]
    for name in ("run#1.sqlite", "run?1.sqlite", "run%231.sqlite", "run&mode=rwc.sqlite"):
        folder = tmp_path / name.replace("?", "q").replace("#", "h").replace("%", "p").replace("&", "a")
        folder.mkdir()
        path = folder / name
        path.write_bytes((tmp_path / "ok.sqlite").read_bytes())
        trace = trace_read.read(path)[0]
        assert [(k.start, k.end, k.name) for k in trace.kernels] == [(k.start, k.end, k.name) for k in plain.kernels]
        assert trace.steps == plain.steps
        assert sorted(p.name for p in folder.iterdir()) == [name], name
