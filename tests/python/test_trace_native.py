"""The native Kineto reader (trace_reader/, ob_trace_columns; issue 82) against the Python reader it stands in for:
the same RankTrace, field by field, and the same step figures on every trace the suite ships; the same analysis
files from ob-analyze; and hostile input bounded (brackets inside strings are not nesting; an event beyond the cap
refused). Skips where the reader is not built."""
import dataclasses
import gzip
import json
import math
import os
import subprocess
import sys

import pytest

from conftest import REPO, built, tool
from overlap_bench.trace import trace_native, trace_read, trace_stats

SHIPPED = sorted([*(REPO / "tests" / "data" / "traces").rglob("*.trace.json*"),
                  *(REPO / "overlap_bench" / "trace" / "data").glob("*.trace.json*"),
                  *(p for p in (REPO / "results").rglob("*.trace.json*")  # every shipped and published trace
                    if "runs" not in p.relative_to(REPO / "results").parts[:1])])


@pytest.fixture(scope="module")
def native(build_dir):
    return str(built(build_dir, "trace_reader/ob_trace_columns"))


def read_with(path, choice, monkeypatch):
    monkeypatch.setenv(trace_native.ENVIRONMENT, choice)
    return trace_read.read(path)


def same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def fields(trace):
    return {k: v for k, v in dataclasses.asdict(trace).items() if k not in ("ops", "wrapping")}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO)))
def test_same_trace_and_figures_as_the_python_reader(path, native, monkeypatch):
    old, = read_with(path, "0", monkeypatch)
    new, = read_with(path, native, monkeypatch)
    old_fields, new_fields = fields(old), fields(new)
    for key in old_fields:
        assert same(old_fields[key], new_fields[key]), f"{path.name}: {key} differs"
    # the native reader's own figures (trace_reader/step_figures.cpp) where it computed them, else Python's again
    for a, b in zip(trace_stats.step_stats(old), trace_stats.step_stats(new), strict=True):
        assert fields_equal(a, b), f"{path.name}: step {a.step} differs"
    assert trace_stats.step_parts(old) == trace_stats.step_parts(new)
    assert trace_stats.kernel_span(old) == trace_stats.kernel_span(new)
    for _, start, end in old.steps:
        assert trace_stats.compute_launched(old, start, end) == trace_stats.compute_launched(new, start, end)


def test_native_figures_where_the_markers_tell_the_steps(native, monkeypatch):
    """The native figures are computed (not left to Python) on the shipped traces whose steps are the profiler's
    markers with no compute-only range: the comparison above is of C++ against Python there."""
    computed = {p.name for p in SHIPPED if trace_stats.native_figures(read_with(p, native, monkeypatch)[0])}
    assert {"ddp-1024x8x256-25mb.rank0.trace.json.gz"} <= computed, computed
    assert len(computed) >= len(SHIPPED) // 2, computed


def fields_equal(a, b):
    return all(same(x, y) for x, y in zip(dataclasses.astuple(a), dataclasses.astuple(b), strict=True))


def test_same_analysis_files(native, tmp_path):
    traces = sorted((REPO / "tests" / "data" / "traces" / "2gpu").glob("ddp-*.trace.json.gz"))
    outputs = {}
    for name, choice in (("python", "0"), ("native", native)):
        env = dict(os.environ, **{trace_native.ENVIRONMENT: choice})
        done = subprocess.run([*tool("analyze.py"), *map(str, traces), "--out", str(tmp_path / name)],
                              capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, done.stderr
        outputs[name] = done.stdout
    assert outputs["python"] == outputs["native"]
    for table in ("analysis.csv", "analysis.ranks.csv", "analysis.buckets.csv", "analysis.timeline.csv"):
        assert (tmp_path / "python" / table).read_text() == (tmp_path / "native" / table).read_text(), table


def test_brackets_inside_strings_are_not_nesting(native, tmp_path, monkeypatch):
    """A 60 KB trace of brackets inside a string (round 6: the Python reader took 1 GB): read at once, in little
    memory, its one event kept."""
    events = [{"ph": "X", "cat": "kernel", "name": "[" * 60000, "ts": 1, "dur": 1, "args": {"stream": 7}},
              {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 0, "dur": 1,
               "args": {"correlation": 1}}]
    path = tmp_path / "brackets.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace, = read_with(path, native, monkeypatch)
    assert [k.name for k in trace.kernels] == ["[" * 60000]


def test_deep_nesting_and_huge_events_refused(native, tmp_path, monkeypatch):
    deep = tmp_path / "deep.trace.json"
    deep.write_text('{"traceEvents": [{"ph": "X", "args": ' + "[" * 600 + "]" * 600 + "}]}")
    with pytest.raises(Exception, match="nests deeper"):
        read_with(deep, native, monkeypatch)
    huge = tmp_path / "huge.trace.json.gz"
    with gzip.open(huge, "wt") as out:
        out.write('{"traceEvents": [{"ph": "X", "name": "' + "a" * (17 << 20) + '"}]}')
    with pytest.raises(Exception, match="longer than"):
        read_with(huge, native, monkeypatch)


def test_left_to_python_where_it_does_not_reproduce(native, tmp_path, monkeypatch):
    """A step marker that is not digits: the native reader leaves the file to the Python reader, whose answer
    (here a usage error naming the file) stands."""
    path = tmp_path / "odd.trace.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#x", "ts": 1, "dur": 1}]}))
    monkeypatch.setenv(trace_native.ENVIRONMENT, native)
    assert trace_native.read(path) is None
    with pytest.raises(Exception):
        trace_read.read(path)


def test_each_format_chosen_by_content(tmp_path):
    """Each format a row (trace_formats): an Nsight export, this suite's timeline and Chrome trace and a Kineto
    trace are told apart by their first bytes, whatever their names."""
    from overlap_bench.trace import trace_formats

    sqlite = tmp_path / "a.bin"
    sqlite.write_bytes(b"SQLite format 3\0" + bytes(100))
    timeline = tmp_path / "b.txt"
    timeline.write_text("rank,lane,name,iter,chunk,start_us,end_us\n")
    own = tmp_path / "c.json"
    own.write_text('{"displayTimeUnit": "ms", "traceEvents": []}')
    kineto = tmp_path / "d.json"
    kineto.write_text('{"schemaVersion": 1, "traceEvents": []}')
    assert [trace_formats.choose(p).name for p in (sqlite, timeline, own, kineto)] == [
        "nsys-sqlite", "own-timeline-csv", "own-chrome-trace", "kineto-json"]


def test_nsys_views_refused(tmp_path):
    """An Nsight export whose StringIds is a recursive view (round 6: it grew without bound) is refused at once."""
    import sqlite3

    from overlap_bench.core import ob_tool

    path = tmp_path / "view.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, shortName, streamId, gridX, blockX, "
               "correlationId, deviceId)")
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start, correlationId)")
    db.execute("CREATE VIEW StringIds AS WITH RECURSIVE n(id, value) AS (SELECT 1, 'a' UNION ALL "
               "SELECT id + 1, value || 'a' FROM n) SELECT id, value FROM n")
    db.commit()
    db.close()
    with pytest.raises(ob_tool.UsageError, match="StringIds is a view"):
        trace_read.read(path)


def test_ranks_in_parallel_give_the_same_figures(native, monkeypatch):
    """trace_ranks: the native readers side by side and the ranks' steps in forked workers give what reading and
    measuring each rank in turn gives."""
    from overlap_bench.trace import trace_ranks

    monkeypatch.setenv(trace_native.ENVIRONMENT, native)
    paths = sorted((REPO / "tests" / "data" / "traces" / "4gpu").glob("*.trace.json.gz"))
    together = trace_ranks.read_all(paths)
    alone = [t for p in paths for t in trace_read.read(p)]
    assert [fields(t) for t in together] == [fields(t) for t in alone]
    serial = [s for t in alone for s in trace_stats.step_stats(t)]
    assert all(fields_equal(a, b) for a, b in zip(trace_ranks.stats_all(together), serial, strict=True))


@pytest.mark.parametrize("path", SHIPPED[:4], ids=lambda p: p.name)
def test_standard_library_alone_reads_the_same(path, monkeypatch):
    """Without ijson (and without the native reader), a small trace is read whole by the standard library's json,
    its nesting bounded first: the same RankTrace as ijson's."""
    import sys

    old, = read_with(path, "0", monkeypatch)
    monkeypatch.setitem(sys.modules, "ijson", None)  # import ijson now fails
    new, = trace_read.read(path)
    old_fields, new_fields = fields(old), fields(new)
    for key in old_fields:
        assert same(old_fields[key], new_fields[key]), f"{path.name}: {key} differs"


def test_reader_imports_without_numpy_or_pandas():
    """The reader's modules (what the probe's split reads its traces with) import with the standard library alone."""
    code = ("import sys\nfor m in ('numpy', 'pandas', 'ijson'): sys.modules[m] = None\n"
            "from overlap_bench.trace import trace_read, trace_formats, trace_native, trace_nsys, trace_own\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr


# Runs a command and prints the peak resident memory of it and every process it ran. A process started from this one
# (vfork) records this one's peak as its own before its exec: the command is started by a small Python instead.
PEAK = ("import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
        "sys.stderr.buffer.write(done.stderr)\n"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def peak_of(command, env=None):
    """(exit code, peak resident KB of the command and its children, its stderr)."""
    done = subprocess.run([sys.executable, "-c", PEAK, *command], capture_output=True, text=True, env=env,
                          timeout=600)
    code, peak = done.stdout.split()
    return int(code), int(peak), done.stderr


def test_memory_bounded_on_a_trace_larger_than_the_bound(native, tmp_path):
    """256 MB of events streamed through a pipe: the reader's peak resident memory stays under 128 MB (one chunk,
    the longest event and one batch's parser buffers), whatever the file's size."""
    import threading

    pipe = tmp_path / "trace.fifo"
    os.mkfifo(pipe)
    event = b'{"ph": "X", "cat": "python_function", "name": "f [x]", "ts": 1, "dur": 1, "args": {"a": "{["}},\n'
    kept = b'{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"stream": 7}}'
    block = event * (1 << 14)

    def write():
        with open(pipe, "wb") as out:
            out.write(b'{"traceEvents": [')
            for _ in range((256 << 20) // len(block)):
                out.write(block)
            out.write(kept + b"]}")

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    code, peak_kb, err = peak_of([native, str(pipe), str(tmp_path / "columns.bin")])
    if writer.is_alive():  # the reader ended without reading the pipe to its end: the writer let go, not waited on
        os.close(os.open(pipe, os.O_RDONLY | os.O_NONBLOCK))
    writer.join(timeout=60)
    assert code == 0, err
    assert peak_kb < 128 * 1024, f"{peak_kb / 1024:.0f} MB resident"
    found = trace_native.sections((tmp_path / "columns.bin").read_bytes())
    assert len(found["k_start"]) == 8  # the one kernel kept


def test_a_kineto_trace_beyond_the_input_cap_is_the_native_readers(native, tmp_path, monkeypatch):
    """A Kineto trace larger than the input policy's cap (1 GiB; here made small) is read where the native reader
    is built (its memory bounded whatever the size), refused naming the cap where it is not."""
    from overlap_bench.core import ob_tool

    path = SHIPPED[0]
    monkeypatch.setattr(ob_tool, "MOST_INPUT_BYTES", path.stat().st_size - 1)
    trace, = read_with(path, native, monkeypatch)
    assert trace.kernels
    with pytest.raises(ob_tool.UsageError, match="is invalid"):
        read_with(path, "0", monkeypatch)


def test_analysis_memory_bounded_on_a_trace_larger_than_the_bound(native, tmp_path):
    """ob-analyze on a trace larger than the memory bound this test sets (a shipped job's events among 352 MB of
    events it drops): every process it ran stays under 320 MB resident, and its figures are those of the job's trace
    alone (issue 82: peak memory bounded whatever the file's size)."""
    source = REPO / "tests" / "data" / "traces" / "2gpu" / "ddp-1024x8x256-25mb.rank0.trace.json.gz"
    top = json.loads(gzip.open(source).read())
    events = top.pop("traceEvents")
    filler = b'{"ph": "X", "cat": "python_function", "name": "f [x]", "ts": 1, "dur": 1, "args": {"a": "{["}},\n'
    block = filler * (1 << 14)
    big = tmp_path / "big.trace.json"
    with open(big, "wb") as out:
        out.write(json.dumps(top)[:-1].encode() + b', "traceEvents": [\n')
        for _ in range((352 << 20) // len(block)):
            out.write(block)
        out.write(",\n".join(json.dumps(e) for e in events).encode() + b"\n]}\n")
    bound_mb = 320
    assert big.stat().st_size > bound_mb << 20
    env = dict(os.environ, **{trace_native.ENVIRONMENT: native})
    code, peak_kb, err = peak_of([*tool("analyze.py"), str(big), "--out", str(tmp_path / "big")], env)
    assert code == 0, err
    assert peak_kb < bound_mb * 1024, f"{peak_kb / 1024:.0f} MB resident"
    done = subprocess.run([*tool("analyze.py"), str(source), "--out", str(tmp_path / "alone")], capture_output=True,
                          text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    for table in ("analysis.csv", "analysis.buckets.csv", "analysis.timeline.csv"):
        assert (tmp_path / "big" / table).read_text() == (tmp_path / "alone" / table).read_text(), table


def test_gzip_of_several_members_and_trailing_bytes(native, tmp_path, monkeypatch):
    """A gzip file of two members reads as their texts joined (gzread's rule), bytes after the last member ignored,
    and a member cut short is left to the Python reader (which says what it is)."""
    text = json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1,
                                        "args": {"stream": 7}}]}).encode()
    joined = tmp_path / "two.trace.json.gz"
    joined.write_bytes(gzip.compress(text[:20]) + gzip.compress(text[20:]) + b"\0\0 trailing")
    trace, = read_with(joined, native, monkeypatch)
    assert [k.name for k in trace.kernels] == ["k"]
    cut = tmp_path / "cut.trace.json.gz"
    cut.write_bytes(gzip.compress(text)[:-12])
    monkeypatch.setenv(trace_native.ENVIRONMENT, native)
    assert trace_native.read(cut) is None
