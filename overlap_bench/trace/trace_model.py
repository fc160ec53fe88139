"""What a rank's trace becomes once read (trace_read reads the profiler's and Nsight's traces, trace_own this suite's
own runs): the kernels kept, their launches, the host ranges, and the pure helpers on them (intervals, idle time, the
compute-only steps' baseline)."""
import bisect
import collections
import functools
import math
import statistics  # median as numpy gives it (the middle, or the mean of the two middle values)
from dataclasses import dataclass, field

from overlap_bench.core import inputs

# The host calls of the data-parallel wrapper and its collectives, by name prefix: c10d's collectives and their
# records, NCCL's host annotations, DDP's reducer (the gradient copied into its bucket), FSDP2's hooks and copies.
GRAPH_LAUNCHES = ("cudaGraphLaunch", "cuGraphLaunch")  # a CUDA graph's replay: every kernel of it one launch
WRAPPER_CALLS = ("c10d::", "record_param_comms", "nccl:", "torch::distributed::reducer::", "FSDP::", "fsdp::")
# Gloo's collectives run on the host, not as GPU kernels: its own ranges ("gloo:all_reduce", on the thread that moves
# the data) where the trace holds them, else, in a trace whose distributedInfo says backend gloo, c10d's records of the
# collectives (record_param_comms, else the c10d:: ops). They are read as kernels on HOST_STREAM (communication, each
# launched at its own start), not as the wrapper's host calls (not host pacing).
GLOO_OPS = "gloo:"
GLOO_RECORDS = ("record_param_comms",)
GLOO_C10D = ("c10d::allreduce_", "c10d::allgather_", "c10d::reduce_scatter_", "c10d::broadcast_",
             "c10d::_allgather_base_", "c10d::_reduce_scatter_base_", "c10d::alltoall_", "c10d::reduce_")
HOST_STREAM = -2
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

    @functools.cached_property  # read many times a kernel by the analysis; a kernel is never changed once read
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
    """A trace file to read, gzipped or not (its first bytes tell), through the one input policy (inputs.open_input:
    its size on disk, what it inflates to and how deep it nests all bounded)."""
    return inputs.open_input(path, "TRACE", json_depth=inputs.MOST_JSON_DEPTH)


def union(intervals):
    """Disjoint, sorted intervals covering `intervals` ((start, end) pairs)."""
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def length(intervals):
    return float(sum(end - start for start, end in intervals))


def overlap_with(start, end, cover):
    """How much of [start, end) the disjoint sorted intervals `cover` hold (found by bisection: a trace's cover holds
    thousands of intervals)."""
    ends = cover.ends if isinstance(cover, (Cover, Spans)) else [b for _, b in cover]
    total = 0.0
    for i in range(bisect.bisect_right(ends, start), len(cover)):
        a, b = cover[i]
        if a >= end:
            break
        total += min(b, end) - max(a, start)
    return total


class Cover(list):
    """A union of intervals with its ends kept for bisection."""

    def __init__(self, intervals):
        super().__init__(union(intervals))
        self.ends = [b for _, b in self]


class Spans:
    """Intervals already disjoint and sorted, as two columns (a slice of the native reader's unions): read as a Cover
    is (its ends for bisection, (start, end) by index), with no list built per interval."""

    def __init__(self, starts, ends):
        self.starts, self.ends = starts, ends

    def __len__(self):
        return len(self.ends)

    def __getitem__(self, i):
        return self.starts[i], self.ends[i]

    def __iter__(self):
        return zip(self.starts, self.ends)

    def __eq__(self, other):  # as the Cover of the same intervals
        return [list(pair) for pair in self] == [list(pair) for pair in other]


def minus(intervals, cover):
    """|intervals \\ cover| for disjoint sorted lists."""
    return length(intervals) - sum(overlap_with(a, b, cover) for a, b in intervals)


def memo(trace, name, key, make):
    """make(trace), kept on the trace under `name` while `key` (what it was made from) stays the same."""
    cached = trace.__dict__.get(name)
    if cached is None or cached[0] != key:
        cached = trace.__dict__[name] = (key, make(trace))
    return cached[1]


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
    return {key: float(statistics.median(v)) for key, v in times.items()}


def set_compute_only(trace, steps, source):
    """The job's compute-only steps (each a list of Kernels; `source` says where they ran) as the slowdown's
    baseline: the medians of their n-th instances (nth_medians), their median idle time and span."""
    trace.isolated = nth_medians(steps)
    trace.compute_only_idle = float(statistics.median([idle(kernels) for kernels in steps]))
    trace.compute_only_ms = float(statistics.median([max(k.end for k in ks) - min(k.start for k in ks)
                                                     for ks in steps])) / 1e3
    trace.baseline = source
