"""Reading a job's own profile into what ob-analyze needs, streamed so that memory stays bounded by the events kept,
not by the file: the PyTorch profiler's Chrome trace (Kineto JSON, one file per rank, gzip too; read with ijson),
Nsight Systems' exported SQLite (`nsys export --type sqlite`), and this suite's own runs (trace_own).

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
import pathlib
import sqlite3
import zlib
from dataclasses import dataclass, field

import numpy as np

from overlap_bench import ob_tool

# The host calls of the data-parallel wrapper and its collectives, by name prefix: c10d's collectives and their
# records, NCCL's host annotations, DDP's reducer (the gradient copied into its bucket), FSDP2's hooks and copies.
GRAPH_LAUNCHES = ("cudaGraphLaunch", "cuGraphLaunch")  # a CUDA graph's replay: every kernel of it one launch
WRAPPER_CALLS = ("c10d::", "record_param_comms", "nccl:", "torch::distributed::reducer::", "FSDP::", "fsdp::")
# The wrapper's annotations around the user's own code (DDP's forward wraps the module's): only their host time
# before the first operator inside them and after the last is the wrapper's (DDP's pre- and post-forward).
WRAPPING_CALLS = ("DistributedDataParallel.forward",)
# The host range a job marks its compute-only steps with (the same model and optimizer without the wrapper):
# `with torch.profiler.record_function(COMPUTE_ONLY): step()`.
COMPUTE_ONLY = "ob_compute_only"
# Microseconds: the largest timestamp or duration a trace can hold (about 31 years: a clock's epoch time fits).
MOST_US = 1e15
DTYPE_BYTES = {"Float": 4, "float": 4, "Half": 2, "BFloat16": 2, "Double": 8, "Int": 4, "Long": 8, "Byte": 1}


@dataclass
class Kernel:
    start: float  # microseconds, the trace's own clock
    end: float
    name: str
    stream: int
    shape: str = ""  # grid x block: kernels of one name and launch shape are "the same kernel"
    correlation: int = -1
    collective: str = ""  # NCCL's: allreduce, reduce_scatter, allgather, ...
    nbytes: float = 0.0

    @property
    def comm(self):
        return bool(self.collective) or "nccl" in self.name.lower()


@dataclass
class RankTrace:
    path: str
    rank: int = -1
    world: int = 0
    gpu: str = ""
    nccl: str = ""
    start_ns: int = 0
    kernels: list = field(default_factory=list)
    launches: dict = field(default_factory=dict)  # correlation -> host time of the launching call (us)
    graph_launches: set = field(default_factory=set)  # correlations of CUDA graph launches (a replayed step's kernels)
    steps: list = field(default_factory=list)  # (number, host start, host end)
    backward: list = field(default_factory=list)  # (host start, host end, name) of autograd functions
    grads: list = field(default_factory=list)  # (host time, elements) of each AccumulateGrad
    optimizer: list = field(default_factory=list)  # (host start, host end) of optimizer steps
    wrapper: list = field(default_factory=list)  # (host start, host end) of the wrapper's calls (WRAPPER_CALLS)
    wrapping: list = field(default_factory=list)  # (host start, host end, thread) of WRAPPING_CALLS, while read
    ops: dict = field(default_factory=dict)  # thread -> (starts, ends) of its operators, while read
    isolated: dict = field(default_factory=dict)  # (name, shape, n) -> median us in a compute-only run (nth_medians)
    compute_only: list = field(default_factory=list)  # (host start, host end) of COMPUTE_ONLY ranges
    compute_only_idle: float = math.nan  # us: median over those steps of their GPU idle time, first kernel to last
    baseline: str = ""  # where `isolated` came from: "compute-only steps", "compute-only trace", "compute-only mode"
    compute_only_ms: float = math.nan  # the median span of those steps, first kernel to last (as a traced step's)
    system: str = ""


def open_trace(path):
    """A trace file to read, gzipped or not (its first bytes tell)."""
    path = ob_tool.require_input(path, "TRACE")
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gzipped else open(path, "rb")


def _shape(args):
    grid, block = args.get("grid"), args.get("block")
    return f"{grid}x{block}" if grid is not None else ""


def _keep(trace, event):
    """One Kineto event into `trace` (the kinds ob-analyze reads; the rest is dropped as it streams by)."""
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


def _wrapping_ends(trace):
    """Adds to trace.wrapper each wrapping annotation's host time before the first operator inside it and after the
    last (on its thread; all of it where none ran inside), then lets the operators go."""
    threads = {}
    for tid, (starts, ends) in trace.ops.items():
        starts, ends = np.frombuffer(starts, dtype=float), np.frombuffer(ends, dtype=float)
        order = np.argsort(starts, kind="stable")
        threads[tid] = starts[order], ends[order]
    for start, end, tid in trace.wrapping:
        starts, ends = threads.get(tid, (np.empty(0), np.empty(0)))
        lo, hi = np.searchsorted(starts, start, "left"), np.searchsorted(starts, end, "right")
        inner = ends[lo:hi] <= end
        if not inner.any():
            trace.wrapper.append((start, end))
            continue
        trace.wrapper += [(start, float(starts[lo:hi][inner].min())), (float(ends[lo:hi][inner].max()), end)]
    trace.wrapping, trace.ops = [], {}


def union(intervals):
    """Disjoint, sorted intervals covering `intervals` ((start, end) pairs)."""
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def idle(kernels):
    """Microseconds from the first of `kernels` to the last that none of them ran."""
    return max(k.end for k in kernels) - min(k.start for k in kernels) - sum(
        b - a for a, b in union((k.start, k.end) for k in kernels))


def nth_medians(steps):
    """{(name, shape, n): median us} of the n-th instance of each kernel (name and launch shape) in a step, over
    `steps` (each a list of Kernels of one compute-only step): one name and shape may run on tensors of many sizes in
    a step, its n-th instance is the same work in every step of the job."""
    times = collections.defaultdict(list)
    for kernels in steps:
        seen = collections.Counter()
        for k in sorted(kernels, key=lambda k: k.start):
            times[(k.name, k.shape, seen[(k.name, k.shape)])].append(k.end - k.start)
            seen[(k.name, k.shape)] += 1
    return {key: float(np.median(v)) for key, v in times.items()}


def set_compute_only(trace, steps, source):
    """The job's compute-only steps (each a list of Kernels; `source` says where they ran) as the slowdown's
    baseline: the medians of their n-th instances (nth_medians), their median idle time and span."""
    trace.isolated = nth_medians(steps)
    trace.compute_only_idle = float(np.median([idle(kernels) for kernels in steps]))
    trace.compute_only_ms = float(np.median([max(k.end for k in ks) - min(k.start for k in ks) for ks in steps])) / 1e3
    trace.baseline = source


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
    import ijson

    trace = RankTrace(str(path))
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
            else:
                raise ob_tool.UsageError(f"{path}: not a profiler trace (no traceEvents)")
        with open_trace(path) as source:  # again, from the events on (the header keys may follow them)
            for event in ijson.items(source, "traceEvents.item", use_float=True):
                _keep(trace, event)
        _wrapping_ends(trace)
        set_apart_compute_only(trace)
    except (ijson.JSONError, ijson.IncompleteJSONError, UnicodeDecodeError, EOFError, OSError, ValueError,
            gzip.BadGzipFile, TypeError, AttributeError, KeyError, zlib.error) as error:
        if isinstance(error, OSError) and not isinstance(error, (EOFError, gzip.BadGzipFile)) and error.filename:
            raise
        raise ob_tool.UsageError(f"{path}: not a profiler trace ({type(error).__name__}: "
                                f"{str(error).splitlines()[0][:120] if str(error) else 'cut short'})") from None
    return trace


def read_nsys(path):
    """Nsight Systems' SQLite export: its kernels (CUPTI_ACTIVITY_KIND_KERNEL, names from StringIds), the runtime
    calls that launched them, and NVTX ranges named ProfilerStep#N where the job marked them."""
    try:
        db = sqlite3.connect(f"file:{ob_tool.require_input(path, 'TRACE')}?mode=ro", uri=True)
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
        try:
            for start, end, text in db.execute("SELECT start, end, text FROM NVTX_EVENTS WHERE text LIKE "
                                               "'ProfilerStep#%' OR text = ?", (COMPUTE_ONLY,)):
                if text == COMPUTE_ONLY:
                    trace.compute_only.append((start / 1e3, end / 1e3))
                else:
                    trace.steps.append((int(text.split("#", 1)[1]), start / 1e3, end / 1e3))
        except sqlite3.OperationalError:
            pass
        db.close()
        set_apart_compute_only(trace)
    except sqlite3.DatabaseError as error:
        raise ob_tool.UsageError(f"{path}: not an Nsight Systems SQLite export ({error})") from None
    return trace


def read(path):
    """Every rank a file holds: a Kineto trace holds one, a timeline CSV every rank of its run."""
    path = pathlib.Path(path)
    ob_tool.require_input(path, "TRACE")
    with open(path, "rb") as probe:
        head = probe.read(16)
    if head.startswith(b"SQLite format 3"):
        return [read_nsys(path)]
    from overlap_bench import trace_own  # this suite's own runs, read into this module's types

    if path.suffix == ".csv":
        return trace_own.read_timeline(path)
    with open_trace(path) as probe:
        if probe.read(len(trace_own.OWN_TRACE_HEAD)) == trace_own.OWN_TRACE_HEAD:
            return trace_own.read_own_trace(path)
    return [read_kineto(path)]
