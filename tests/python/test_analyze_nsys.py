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
