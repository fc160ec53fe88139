"""Reading a job's own profile into what ob-analyze needs, streamed so that memory stays bounded by the events kept,
not by the file: the PyTorch profiler's Chrome trace (Kineto JSON, one file per rank, gzip too; natively at the
parser's speed where trace_reader/ is built (trace_native), else with ijson). Every format is a row chosen by content
(trace_formats): Nsight Systems' exported SQLite is trace_nsys', this suite's own runs trace_own's.

What is kept per rank: every GPU kernel and memset (start, end, name, stream, grid and block, the launching call's
correlation id, and for a collective its name, element count and type), the launching CUDA runtime calls' host
times, the profiler's step markers (ProfilerStep#N), and the autograd functions and AccumulateGrad calls of the
backward (host ranges, each AccumulateGrad with its parameter's shape): what gradient became ready when, and the host
ranges of the data-parallel wrapper's own calls (WRAPPER_CALLS): what communication costs the launching host.
Steps the job ran without its wrapper inside a host range named COMPUTE_ONLY (trace_job.py profiles some before the
job's steps and some after) are the slowdown's baseline: their kernels' medians are kept (`isolated`), the kernels
themselves are not.
"""
import array
import bisect
import collections
import gzip
import math
import zlib

from overlap_bench.core import ob_tool
from overlap_bench.trace import trace_formats
from overlap_bench.trace.trace_model import (COMPUTE_ONLY, DTYPE_BYTES, GLOO_C10D, GLOO_OPS, GLOO_RECORDS,
                                             GRAPH_LAUNCHES, HOST_STREAM, MOST_US, WRAPPER_CALLS, WRAPPING_CALLS,
                                             Kernel, RankTrace, open_trace, set_compute_only)

def _shape(args):
    grid, block = args.get("grid"), args.get("block")
    return f"{grid}x{block}" if grid is not None else ""


def _keep(trace, event, host=None):
    """One Kineto event into `trace` (the kinds ob-analyze reads; the rest is dropped as it streams by); gloo's host
    collectives and c10d's records of collectives into `host` (a dict of lists, _host_collectives)."""
    cat, name, args = event.get("cat"), event.get("name", ""), event.get("args") or {}
    if event.get("ph") != "X":
        return
    ts, dur = float(event.get("ts", math.nan)), float(event.get("dur", math.nan))
    if not (isinstance(name, str) and isinstance(args, dict)):
        raise ValueError(f"an event's name or args of the wrong type ({type(name).__name__}, "
                         f"{type(args).__name__})")
    if not (abs(ts) <= MOST_US and 0 <= dur <= MOST_US):  # NaN fails both: a time no trace can hold
        raise ValueError(f"event '{name[:60]}': ts {ts} or dur {dur} outside what a trace holds (finite, |ts| and "
                         f"dur at most {MOST_US:g} us, dur not negative)")
    if host is not None and cat in ("cpu_op", "user_annotation"):
        kind = ("ops" if name.startswith(GLOO_OPS) else "records" if name.startswith(GLOO_RECORDS) else
                "c10d" if name.startswith(GLOO_C10D) else None)
        if kind:
            elements = args.get("In msg nelems", 0)
            nbytes = float(elements or 0) * DTYPE_BYTES.get(str(args.get("dtype", "Float")), 4) \
                if isinstance(elements, (int, float)) else 0.0
            host[kind].append((ts, ts + dur, name, str(args.get("Collective name", "")), nbytes))
    if cat in ("kernel", "gpu_memset", "gpu_memcpy"):
        collective = str(args.get("Collective name", "")) if cat == "kernel" else ""
        elements = float(args.get("In msg nelems", 0) or 0)
        trace.kernels.append(Kernel(ts, ts + dur, name, int(args.get("stream", -1)), _shape(args),
                                    int(args.get("correlation", -1)), collective,
                                    elements * DTYPE_BYTES.get(str(args.get("dtype", "Float")), 4)))
    elif cat in ("cuda_runtime", "cuda_driver") and "correlation" in args:
        trace.launches[int(args["correlation"])] = ts
        if name.startswith(GRAPH_LAUNCHES):
            trace.graph_launches.add(int(args["correlation"]))
    elif cat == "user_annotation" and name.startswith("ProfilerStep#"):
        trace.steps.append((int(name.split("#", 1)[1]), ts, ts + dur))
    elif cat == "user_annotation" and name == COMPUTE_ONLY:
        trace.compute_only.append((ts, ts + dur))
    elif cat == "user_annotation" and name.startswith("Optimizer.step"):
        trace.optimizer.append((ts, ts + dur))
    elif cat == "cpu_op" and name == "torch::autograd::AccumulateGrad":
        dims = (args.get("Input Dims") or [[]])[0]
        if not isinstance(dims, list) or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40
                                                 for d in dims):
            raise ValueError(f"AccumulateGrad's Input Dims {str(dims)[:60]} are not a shape (whole numbers)")
        trace.grads.append((ts, float(math.prod(dims)) if dims else 0.0))
    elif cat == "cpu_op" and name.startswith("autograd::engine::evaluate_function: ") and "AccumulateGrad" not in name:
        trace.backward.append((ts, ts + dur, name.split(": ", 1)[1]))
    if cat in ("cpu_op", "user_annotation") and name.startswith(WRAPPER_CALLS):
        trace.wrapper.append((ts, ts + dur))
    elif cat == "user_annotation" and name.startswith(WRAPPING_CALLS):
        trace.wrapping.append((ts, ts + dur, event.get("tid")))
    if cat == "cpu_op":
        starts, ends = trace.ops.setdefault(event.get("tid"), (array.array("d"), array.array("d")))
        starts.append(ts)
        ends.append(ts + dur)
    if cat == "user_annotation" and name.startswith("FSDP"):
        trace.system = "pytorch-fsdp2"


def _host_collectives(trace, host, gloo):
    """Gloo's collectives as communication on the host: its own ranges where the trace holds any, else (a trace of
    backend gloo) c10d's records of them, else its ops; each a kernel on HOST_STREAM launched at its own start (a
    correlation of its own, below any the profiler gives), and no longer one of the wrapper's host calls."""
    chosen = host["ops"] or (host["records"] or host["c10d"] if gloo else [])
    if not chosen:
        return
    taken = set()
    for i, (start, end, name, collective, nbytes) in enumerate(chosen):
        correlation = -2 - i
        label = collective or name.split(":")[-1].strip("_") or name
        trace.kernels.append(Kernel(start, end, name, HOST_STREAM, "", correlation, label, nbytes))
        trace.launches[correlation] = start
        taken.add((start, end))
    trace.wrapper = [w for w in trace.wrapper if w not in taken]


def _wrapping_ends(trace):
    """Adds to trace.wrapper each wrapping annotation's host time before the first operator inside it and after the
    last (on its thread; all of it where none ran inside), then lets the operators go."""
    threads = {}
    for tid, (starts, ends) in trace.ops.items():
        order = sorted(range(len(starts)), key=starts.__getitem__)  # stable, as numpy's argsort(kind="stable")
        threads[tid] = [starts[i] for i in order], [ends[i] for i in order]
    for start, end, tid in trace.wrapping:
        starts, ends = threads.get(tid, ([], []))
        lo, hi = bisect.bisect_left(starts, start), bisect.bisect_right(starts, end)
        inner = [i for i in range(lo, hi) if ends[i] <= end]
        if not inner:
            trace.wrapper.append((start, end))
            continue
        trace.wrapper += [(start, min(starts[i] for i in inner)), (max(ends[i] for i in inner), end)]
    trace.wrapping, trace.ops = [], {}


def set_apart_compute_only(trace):
    """The kernels launched inside the trace's COMPUTE_ONLY host ranges taken out of its kernels, the medians of
    their n-th instances kept as `isolated` (nth_medians: the baseline of the slowdown, as a phase 4 timeline's
    compute-only mode is: trace_own), and the step markers left with no kernel by that taken out of its steps."""
    if not trace.compute_only:
        return
    ranges = sorted(trace.compute_only)
    starts = [a for a, _ in ranges]
    alone, kept = collections.defaultdict(list), []
    for k in trace.kernels:
        i = bisect.bisect_right(starts, trace.launches.get(k.correlation, -math.inf)) - 1
        if i >= 0 and trace.launches[k.correlation] <= ranges[i][1]:
            alone[i].append(k)
        else:
            kept.append(k)
    if not alone:
        return
    hosts = sorted(trace.launches[k.correlation] for k in kept if k.correlation in trace.launches)
    trace.steps = [s for s in trace.steps if bisect.bisect_left(hosts, s[1]) < bisect.bisect_left(hosts, s[2])
                   or not any(a < s[2] and s[1] < b for a, b in ranges)]
    trace.kernels = kept
    set_compute_only(trace, list(alone.values()), "compute-only steps")


def read_kineto(path):
    """A PyTorch profiler trace (Chrome JSON, optionally gzipped), streamed; a usage error naming the file where it
    is not one (not JSON, cut short, no traceEvents, no GPU kernel)."""
    from overlap_bench.trace import trace_native

    native = trace_native.read(path)  # at the parser's speed where it is built; None: read here
    if native is not None:
        set_apart_compute_only(native)
        return native
    try:
        import ijson
    except ImportError:  # the standard library alone (the probe's own small traces): read whole, nesting bounded
        return _read_whole(path)
    trace, gloo = RankTrace(str(path)), False
    try:
        with open_trace(path) as source:
            for prefix, event, value in ijson.parse(source, use_float=True):
                if prefix == "traceEvents.item" and event == "start_map":
                    break
                if prefix == "distributedInfo.rank":
                    trace.rank = int(value)
                elif prefix == "distributedInfo.world_size":
                    trace.world = int(value)
                elif prefix == "distributedInfo.nccl_version":
                    trace.nccl = str(value)
                elif prefix == "deviceProperties.item.name" and not trace.gpu:
                    trace.gpu = str(value)
                elif prefix == "baseTimeNanoseconds":
                    trace.start_ns = int(value)
                elif prefix == "distributedInfo.backend":
                    gloo = str(value) == "gloo"
            else:
                raise ob_tool.UsageError(f"{path}: not a profiler trace (no traceEvents)")
        host = {"ops": [], "records": [], "c10d": []}
        with open_trace(path) as source:  # again, from the events on (the header keys may follow them)
            for event in ijson.items(source, "traceEvents.item", use_float=True):
                _keep(trace, event, host)
        _wrapping_ends(trace)
        _host_collectives(trace, host, gloo)
        set_apart_compute_only(trace)
    except (ijson.JSONError, ijson.IncompleteJSONError, UnicodeDecodeError, EOFError, OSError, ValueError,
            gzip.BadGzipFile, TypeError, AttributeError, KeyError, zlib.error) as error:
        if isinstance(error, OSError) and not isinstance(error, (EOFError, gzip.BadGzipFile)) and error.filename:
            raise
        raise ob_tool.UsageError(f"{path}: not a profiler trace ({type(error).__name__}: "
                                f"{str(error).splitlines()[0][:120] if str(error) else 'cut short'})") from None
    return trace


# Where ijson is not installed, a Kineto trace of at most this many bytes (inflated) is read whole by the standard
# library's json (its nesting counted outside strings first: inputs.parse_json); a larger one needs ijson or the
# native reader.
MOST_WHOLE_BYTES = 64 << 20


def _read_whole(path):
    """read_kineto with the standard library alone: the same header keys (those before the events) and events."""
    from overlap_bench.core import inputs

    with open_trace(path) as source:
        data = source.read(MOST_WHOLE_BYTES + 1)
    if len(data) > MOST_WHOLE_BYTES:
        raise ob_tool.UsageError(f"{path}: larger than {MOST_WHOLE_BYTES >> 20} MiB once inflated: reading it needs "
                                 "ijson (pip install ijson) or the native reader (trace_reader/)")
    top = inputs.parse_json(data, f"{path}: not a profiler trace")
    trace, gloo, host = RankTrace(str(path)), False, {"ops": [], "records": [], "c10d": []}
    try:
        events = top.get("traceEvents") if isinstance(top, dict) else None
        if not isinstance(events, list) or not any(isinstance(e, dict) for e in events):
            raise ob_tool.UsageError(f"{path}: not a profiler trace (no traceEvents)")
        for key, value in top.items():
            if key == "traceEvents":
                break
            if key == "distributedInfo" and isinstance(value, dict):
                trace.rank = int(value.get("rank", trace.rank))
                trace.world = int(value.get("world_size", trace.world))
                trace.nccl = str(value.get("nccl_version", trace.nccl))
                gloo = str(value.get("backend", "")) == "gloo"
            elif key == "deviceProperties" and isinstance(value, list):
                names = [str(d["name"]) for d in value if isinstance(d, dict) and "name" in d]
                trace.gpu = next((n for n in names if n), "")
            elif key == "baseTimeNanoseconds":
                trace.start_ns = int(value)
        for event in events:
            _keep(trace, event, host)
        _wrapping_ends(trace)
        _host_collectives(trace, host, gloo)
        set_apart_compute_only(trace)
    except (ValueError, TypeError, AttributeError, KeyError) as error:
        raise ob_tool.UsageError(f"{path}: not a profiler trace ({type(error).__name__}: "
                                 f"{str(error).splitlines()[0][:120] if str(error) else 'cut short'})") from None
    return trace


# The largest Kineto trace the native reader takes (its memory is bounded whatever the size); every other reader
# keeps the input policy's cap (ob_tool.MOST_INPUT_BYTES).
MOST_NATIVE_BYTES = 64 << 30


def require_trace(path, option="TRACE"):
    """The input policy for a trace: a regular file of at most the policy's cap, or, for a Kineto trace the native
    reader will read, of at most MOST_NATIVE_BYTES. Returns its path."""
    from overlap_bench.trace import trace_native

    path = ob_tool.require_input(path, option, MOST_NATIVE_BYTES)  # a regular file, before anything opens it
    if path.stat().st_size > ob_tool.MOST_INPUT_BYTES and not (
            trace_native.binary() and trace_formats.choose(path).name == "kineto-json"):
        ob_tool.require_input(path, option, ob_tool.MOST_INPUT_BYTES)  # the policy's refusal, its cap named
    return path


def read(path):
    """Every rank a file holds (a Kineto trace holds one, a timeline CSV every rank of its run), read by the format
    its content names (trace_formats)."""
    path = require_trace(path)
    return trace_formats.choose(path).read(path)


trace_formats.register("kineto-json", lambda head, path: True, lambda path: [read_kineto(path)], catch_all=True)
