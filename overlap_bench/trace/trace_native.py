"""The native Kineto reader (trace_reader/, ob_trace_columns: simdjson over the file in chunks, bounded memory) run
on one trace, and its columns read back into the RankTrace the Python reader (trace_read.read_kineto) would make:
the same events kept with the same numbers. It answers None where it is not built, not found, cannot run here (an
older CPU), or met something it leaves to the Python reader (exit 4: a string where a number stands, bad JSON); a
trace it refuses (nests too deep, one event too large, inflates too far) is a usage error, as the Python reader's.
Where the reader computed the steps' figures too (trace_reader/step_figures.hpp: the steps are the profiler's markers
and the trace holds no compute-only range), the trace is a NativeTrace: its figures, buckets and timeline rows come
from those columns, and its kernels, launches, autograd functions and gradients are built only where something asks
for them (a --compute-only baseline, the bucket advice, a test). Standard library only: the array module reads the
columns."""
import array
import os
import pathlib
import subprocess
import sys
import tempfile

from overlap_bench.core import ob_tool
from overlap_bench.trace.trace_model import Kernel, RankTrace

BINARY = "ob_trace_columns"
MAGIC = b"OBCOLS1\n"
# OB_TRACE_NATIVE=0: every trace read in Python; =PATH: that ob_trace_columns; unset or 1: the one built (the
# equality test compares both).
ENVIRONMENT = "OB_TRACE_NATIVE"


def binary():
    """The built ob_trace_columns (OB_TRACE_NATIVE's, on PATH, or in this checkout's build folders), or None."""
    choice = os.environ.get(ENVIRONMENT, "")
    if choice == "0":
        return None
    if choice not in ("", "1"):
        return choice
    try:
        return ob_tool.find_built(BINARY, folder="trace_reader")
    except ob_tool.UsageError:
        return None


def sections(data):
    """{name: a view of its bytes} of a columns file (trace_reader/columns_file.hpp)."""
    if data[:len(MAGIC)] != MAGIC:
        raise ValueError("not a columns file")
    found, at, view = {}, len(MAGIC), memoryview(data)
    while at < len(data):
        length = int.from_bytes(data[at:at + 4], "little")
        name = data[at + 4:at + 4 + length].decode()
        at += 4 + length
        size = int.from_bytes(data[at:at + 8], "little")
        at += 8
        found[name] = view[at:at + size]  # no copy: the file's bytes are held once
        at += size + (8 - size % 8) % 8
    return found


def _column(found, name, code):
    values = array.array(code)
    values.frombytes(found[name])
    if sys.byteorder != "little":
        values.byteswap()
    return values


def _strings(found, name):
    text, offsets = found[f"{name}.text"], _column(found, f"{name}.offsets", "Q")
    return [str(text[a:b], "utf-8") for a, b in zip(offsets, offsets[1:])]


class NativeTrace(RankTrace):
    """A RankTrace read natively with its steps' figures: its kernels, launches, autograd functions and gradients
    built on first use."""

    @property
    def kernels(self):
        if self._kernels is None:
            col = self.native.column
            strings = self.native.strings
            self._kernels = [Kernel(s, e, strings[n], st, strings[sh], c, strings[co], b) for s, e, n, st, sh, c, co, b
                             in zip(col("k_start"), col("k_end"), col("k_name", "I"), col("k_stream", "q"),
                                    col("k_shape", "I"), col("k_corr", "q"), col("k_coll", "I"), col("k_bytes"))]
        return self._kernels

    @kernels.setter
    def kernels(self, value):
        self._kernels = value

    @property
    def launches(self):
        if self._launches is None:
            self._launches = dict(zip(self.native.column("l_corr", "q"), self.native.column("l_ts")))
        return self._launches

    @launches.setter
    def launches(self, value):
        self._launches = value

    @property
    def backward(self):
        if self._backward is None:
            self._backward = self.native.backward()
        return self._backward

    @backward.setter
    def backward(self, value):
        self._backward = value

    @property
    def grads(self):
        if self._grads is None:
            self._grads = self.native.grads()
        return self._grads

    @grads.setter
    def grads(self, value):
        self._grads = value


class Native:
    """The columns of one rank as read (sections), for what is computed from them without building its kernels."""

    def __init__(self, found):
        self.found = found
        self.strings = _strings(found, "strings")
        self.computed = "figures" in found and _column(found, "figures", "q")[0] == 1
        self.sha256 = str(found.get("sha256", b""), "ascii") or None  # the file's, hashed as read (None: not built so)

    def column(self, name, code="d"):
        return _column(self.found, name, code)

    def backward(self):
        """RankTrace.backward: (host start, host end, name) of each autograd function."""
        col = self.column
        return [(s, e, self.strings[n]) for s, e, n in zip(col("bw_start"), col("bw_end"), col("bw_name", "I"))]

    def grads(self):
        """RankTrace.grads: (host time, elements) of each AccumulateGrad."""
        return list(zip(self.column("grad_ts"), self.column("grad_elems")))

    def step_stats(self, rank):
        """trace_stats.StepStats of every step, from the reader's figures."""
        from overlap_bench.trace.trace_stats import StepStats

        col, strings = self.column, self.strings
        names, nbytes, starts, ends = (col("bucket_name", "I"), col("bucket_bytes"), col("bucket_start"),
                                       col("bucket_end"))
        bounds = col("bucket_from", "Q")
        stats = []
        for i, (number, start, end, comm, compute, exposed, slowdown, slowed, host, wrapper, replayed,
                blocking) in enumerate(zip(col("number", "q"), col("start"), col("end"), col("comm_ms"),
                                          col("compute_ms"), col("exposed_ms"), col("slowdown_ms"), col("slowed_ms"),
                                          col("host_ms"), col("wrapper_gpu_ms"), col("replayed", "B"),
                                          col("blocking_ms"))):
            buckets = [(strings[names[b]], nbytes[b], (ends[b] - starts[b]) / 1e3, starts[b], ends[b])
                       for b in range(bounds[i], bounds[i + 1])]
            stats.append(StepStats(rank, number, start, end, comm, compute, exposed, slowdown, slowed, buckets,
                                   host_ms=host, idle_added_ms=0.0, wrapper_gpu_ms=wrapper, replayed=bool(replayed),
                                   blocking_ms=blocking))
        return stats

    def step_parts(self):
        """trace_stats.step_parts: {step: ([(start, end)] of its collectives, Spans of its compute kernels' union)}."""
        from overlap_bench.trace.trace_model import Spans

        col = self.column
        numbers, bounds = col("number", "q"), col("bucket_from", "Q")
        starts, ends = col("bucket_start"), col("bucket_end")
        covers, cover_starts, cover_ends = col("cover_from", "Q"), col("cover_start"), col("cover_end")
        return {n: (list(zip(starts[bounds[i]:bounds[i + 1]], ends[bounds[i]:bounds[i + 1]])),
                    Spans(cover_starts[covers[i]:covers[i + 1]], cover_ends[covers[i]:covers[i + 1]]))
                for i, n in enumerate(numbers)}

    def compute_launched(self, start, end):
        """(host time, ms) of each compute kernel launched from host time `start` to `end`, in the trace's order."""
        host, comm = self.column("k_host"), self.column("k_comm", "B")
        starts, ends = self.column("k_start"), self.column("k_end")
        return [(h, (ends[i] - starts[i]) / 1e3) for i, h in enumerate(host) if start <= h < end and not comm[i]]

    def span(self):
        """(kernels, earliest start, latest end)."""
        starts, ends = self.column("k_start"), self.column("k_end")
        return len(starts), (min(starts) if starts else None), (max(ends) if ends else None)

    def rows_blob(self):
        """The columns the timeline's rows are written from (ob_trace_columns --timeline reads them)."""
        keep = ("strings.text", "strings.offsets", "k_start", "k_end", "k_coll", "k_comm", "row_kernel", "row_from",
                "number")
        parts = [MAGIC]
        for name in keep:
            data = self.found[name]
            parts += [len(name).to_bytes(4, "little"), name.encode(), len(data).to_bytes(8, "little"), data,
                      bytes((8 - len(data) % 8) % 8)]
        return b"".join(parts)

    def step_rows(self, numbers):
        """The timeline's rows (lane, name, iter, chunk, start, end) of the steps whose number is in `numbers`."""
        col = self.column
        coll, comm, starts, ends = col("k_coll", "I"), col("k_comm", "B"), col("k_start"), col("k_end")
        rows, kernels, bounds = [], col("row_kernel", "I"), col("row_from", "Q")
        for i, number in enumerate(col("number", "q")):
            if number not in numbers:
                continue
            bucket = 0
            for k in kernels[bounds[i]:bounds[i + 1]]:
                rows.append(("trace:comm" if comm[k] else "trace:compute",
                             (self.strings[coll[k]] or "comm") if comm[k] else "compute", number,
                             bucket if comm[k] else -1, starts[k], ends[k]))
                bucket += int(comm[k])
        return rows


def write_timeline(trace, origin, out):
    """trace's timeline rows (analysis.timeline.csv's, without its header) appended to the open file `out`, times
    from `origin` (ob_trace_columns --timeline)."""
    out.flush()
    done = subprocess.run([binary(), "--timeline", str(trace.rank), float(origin).hex()],
                          input=trace.native.rows_blob(), stdout=out, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise OSError(f"ob_trace_columns --timeline: {done.stderr.decode(errors='replace').strip()[:200]}")


def to_trace(path, found):
    """The columns as a RankTrace, before _wrapping_ends and set_apart_compute_only (trace_read does both)."""
    import json

    col = lambda name, code="d": _column(found, name, code)  # noqa: E731
    rank, world, start_ns, nccl, gpu, fsdp = col("header", "q")
    native = Native(found)
    strings, tids = native.strings, [json.loads(t) if t else None for t in _strings(found, "tids")]
    kind = NativeTrace if native.computed else RankTrace
    trace = kind(str(path), rank=rank, world=world, gpu=strings[gpu], nccl=strings[nccl], start_ns=start_ns)
    trace.native = native
    if native.computed:  # built where something asks for them (NativeTrace)
        trace.kernels, trace.launches, trace.backward, trace.grads = None, None, None, None
    else:
        trace.kernels = [Kernel(s, e, strings[n], st, strings[sh], c, strings[co], b) for s, e, n, st, sh, c, co, b
                         in zip(col("k_start"), col("k_end"), col("k_name", "I"), col("k_stream", "q"),
                                col("k_shape", "I"), col("k_corr", "q"), col("k_coll", "I"), col("k_bytes"))]
        trace.launches = dict(zip(col("l_corr", "q"), col("l_ts")))
        trace.backward, trace.grads = native.backward(), native.grads()
    trace.graph_launches = set(col("graph_corr", "q"))
    trace.steps = list(zip(col("step_number", "q"), col("step_start"), col("step_end")))
    trace.compute_only = list(zip(col("co_start"), col("co_end")))
    trace.optimizer = list(zip(col("opt_start"), col("opt_end")))
    trace.wrapper = list(zip(col("wrap_start"), col("wrap_end")))
    trace.wrapping = [(s, e, tids[t]) for s, e, t in zip(col("wrapping_start"), col("wrapping_end"),
                                                          col("wrapping_tid", "I"))]
    ops = {}
    for t, s, e in zip(col("op_tid", "I"), col("op_start"), col("op_end")):
        starts, ends = ops.setdefault(t, (array.array("d"), array.array("d")))
        starts.append(s)
        ends.append(e)
    trace.ops = {tids[t]: pair for t, pair in ops.items()}
    if fsdp:
        trace.system = "pytorch-fsdp2"
    return trace


# Columns read ahead (trace_ranks.read_all runs the readers side by side): path -> a future of columns() of it.
PREFETCHED = {}


def columns(path):
    """(the columns file's bytes or None, a usage error's text or None) of ob_trace_columns on `path`: None where
    the native reader is not at hand or leaves this trace to the Python reader."""
    command = binary()
    if command is None:
        return None, None
    with tempfile.TemporaryDirectory(prefix="ob-columns-") as scratch:
        out = pathlib.Path(scratch) / "columns.bin"
        try:
            done = subprocess.run([command, str(path), str(out)], capture_output=True, text=True)
        except OSError:
            return None, None
        if done.returncode == 2:
            return None, f"TRACE: '{path}' is invalid: {done.stderr.strip()[:200]}"
        if done.returncode != 0:  # 4: left to Python; a signal (SIGILL on an older CPU) or 3: Python reads it too
            return None, None
        return out.read_bytes(), None


def read(path):
    """A Kineto trace read natively (before _wrapping_ends and set_apart_compute_only), or None where the native
    reader is not at hand or leaves this trace to the Python reader."""
    data, refused = PREFETCHED.pop(str(path)).result() if str(path) in PREFETCHED else columns(path)
    if refused:
        raise ob_tool.UsageError(refused)
    return to_trace(path, sections(data)) if data is not None else None
