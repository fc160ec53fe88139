"""What ob-analyze measures in a rank's trace (METRICS.md, "Your own job"): its steps, and per step the
communication (NCCL kernels: their union in time), the compute (every other kernel and memset), the communication
hidden behind compute and the exposed rest, and the compute slowdown under overlap: the same compute kernels (name
and launch shape) timed while a collective ran against while none did, in the same trace (against the same instance
in the job's compute-only steps where the trace holds them, with the GPU's idle time beyond theirs).
"""
import bisect
import collections
import math
from dataclasses import dataclass

import numpy as np

from overlap_bench.trace.trace_model import Cover, idle, length, memo, minus, overlap_with, union  # noqa: F401

# A compute kernel starting this close after a collective's exposed end, launched before it: it waited for it.
BLOCKING_US = 20.0


def steps_of(trace):
    """[(number, [kernels])] of a rank: by the profiler's step markers (a kernel in the step whose host range holds
    its launching call), or, without markers, by the period of the kernel-name sequence; of replayed steps and eager
    ones, the replayed (only_replayed). Found once per trace (step_stats, peer_waits and the timeline each ask),
    again where its kernels, markers or launches changed since."""
    return memo(trace, "_steps_of", (len(trace.kernels), len(trace.steps), len(trace.launches),
                                     len(trace.graph_launches)), _steps_of)


def _steps_of(trace):
    kernels = sorted(trace.kernels, key=lambda k: k.start)
    if trace.steps and trace.launches:
        launched = sorted((trace.launches.get(k.correlation, -1.0), i) for i, k in enumerate(kernels))
        hosts = [h for h, _ in launched]
        found = []
        for number, start, end in sorted(trace.steps, key=lambda s: s[1]):
            lo, hi = bisect.bisect_left(hosts, start), bisect.bisect_left(hosts, end)
            mine = sorted((kernels[i] for _, i in launched[lo:hi]), key=lambda k: k.start)
            if mine:
                found.append((number, mine))
        if found:
            return only_replayed(trace, found)
    if trace.steps and not trace.launches:  # a timeline CSV: every iteration's events (no kernel: no step)
        found = [(n, [k for k in kernels if start <= k.start < end]) for n, start, end in sorted(trace.steps)]
        return [(n, ks) for n, ks in found if ks]
    return only_replayed(trace, by_repetition(kernels))


def replayed(trace, kernels):
    """Whether most of a step's kernels were launched by CUDA graph launches (replayed)."""
    return 2 * sum(k.correlation in trace.graph_launches for k in kernels) > len(kernels)


def only_replayed(trace, steps):
    """Where a trace holds replayed steps and eager ones, the replayed: they are the job's steps, the eager ones
    (trace_job.py --graph profiles one before them) lend them only the wrapper's kernels (wrapper_signatures)."""
    kept = [(n, ks) for n, ks in steps if replayed(trace, ks)]
    return kept if kept else steps


def wrapper_signatures(trace, calls):
    """(name, launch shape) of the kernels the wrapper's host calls launched in the trace's eager steps and no other
    call did: in a replayed step, where one graph launch launched every kernel, these are the wrapper's own."""
    eager = [k for k in trace.kernels if not k.comm and k.correlation not in trace.graph_launches]
    theirs = [inside(trace.launches.get(k.correlation, -1.0), calls) for k in eager]
    return ({(k.name, k.shape) for k, t in zip(eager, theirs) if t}
            - {(k.name, k.shape) for k, t in zip(eager, theirs) if not t})


def by_repetition(kernels):
    """Steps as the repetition of the kernel sequence of the stream that ran the most compute kernels (collectives and
    other streams interleave with it differently from step to step): the shortest period over which its kernel names
    repeat (99 % of them; else 90 %: a step's layers repeat within it, so the looser rule is taken only where no
    period holds the stricter one), each step cut where a period begins on that stream and holding every kernel that
    started from there to the next. A trace with fewer than two periods is one step."""
    compute = [k for k in kernels if not k.comm]
    if not compute:
        return [(0, kernels)]
    main = collections.Counter(k.stream for k in compute).most_common(1)[0][0]
    sequence = [k for k in compute if k.stream == main]
    codes = np.unique([k.name for k in sequence], return_inverse=True)[1]
    n, loose = len(codes), None
    for period in range(1, n // 2 + 1):
        same = np.count_nonzero(codes[:-period] == codes[period:]) / (n - period)
        loose = loose or (period if same >= 0.9 else None)
        if same >= 0.99:
            break
    else:
        period = loose
    if period is None:
        return [(0, kernels)]
    cuts = [sequence[i].start for i in range(0, n - period + 1, period)]
    cuts.append(sequence[n - n % period].start if n % period else float("inf"))
    ordered = sorted(kernels, key=lambda k: k.start)
    starts = [k.start for k in ordered]
    return [(s, ks) for s, ks in ((s, ordered[bisect.bisect_left(starts, a):bisect.bisect_left(starts, b)])
                                  for s, (a, b) in enumerate(zip(cuts, cuts[1:]))) if ks]  # no kernel: no step


@dataclass
class StepStats:
    rank: int
    step: int
    start: float
    end: float
    comm_ms: float
    compute_ms: float
    exposed_ms: float
    slowdown_ms: float  # compute kernels' time under overlap beyond their time alone
    slowed_ms: float  # those kernels' time alone (the denominator of the slowdown)
    buckets: list  # (collective, bytes, ms, start, end) of each collective in launch order
    wait_ms: float = 0.0  # of the exposed communication, the wait for a later rank's collective (peer_waits)
    host_ms: float = 0.0  # the wrapper's host calls while the GPU ran nothing (host_comm)
    wrapper_gpu_ms: float = 0.0  # the wrapper's own kernels (not collectives) while no compute kernel ran
    replayed: bool = False  # most of its kernels launched by CUDA graph launches (wrapper_signatures tell its own)
    idle_added_ms: float = 0.0  # GPU idle, first kernel to last, beyond the compute-only steps' and host_ms
    blocking_ms: float = 0.0  # of the exposed communication, what a compute kernel queued behind it waited for

    @property
    def step_ms(self):
        return (self.end - self.start) / 1e3

    @property
    def hidden_pct(self):
        return 100.0 * (1 - self.exposed_ms / self.comm_ms) if self.comm_ms > 0 else float("nan")

    @property
    def added_ms(self):
        return self.exposed_ms + self.slowdown_ms


def alone_medians(trace):
    """Per compute kernel (name and launch shape), the median duration of its instances that ran with no collective
    in flight on the same GPU: the baseline of the slowdown where the trace holds no compute-only run of the job."""
    comm = Cover((k.start, k.end) for k in trace.kernels if k.comm)
    alone = collections.defaultdict(list)
    for k in trace.kernels:
        if not k.comm and overlap_with(k.start, k.end, comm) == 0:
            alone[(k.name, k.shape)].append(k.end - k.start)
    return {key: float(np.median(v)) for key, v in alone.items()}, comm


def baselines(trace, kernels, mine, medians, comm_all):
    """(kernel, its baseline us) for the compute kernels of a step that the slowdown counts, the wrapper's (`mine`)
    left out: where the trace holds a compute-only run of the job (trace.isolated), every one, against the median of
    the same instance there (its name, shape and place n among the step's instances of them); else those that ran
    beside a collective, against the median of the same kernel's lone instances."""
    seen = collections.Counter()
    for k in sorted(kernels, key=lambda k: k.start):
        if k.comm or id(k) in mine:
            continue
        key = (k.name, k.shape)
        if trace.isolated:
            base = trace.isolated.get((*key, seen[key]))
            seen[key] += 1
        else:
            base = medians.get(key) if overlap_with(k.start, k.end, comm_all) > 0 else None
        if base is not None:
            yield k, base


def unmatched(trace, kernels, mine):
    """Ids of a step's compute kernels (not the wrapper's by its host calls, `mine`) of which the compute-only steps
    ran no such instance (the n-th of a name and shape beyond theirs): work the job did and its compute-only step did
    not, the wrapper's own (its copies and hooks' kernels where no host call tells them: a CUDA-only profile)."""
    seen, extra = collections.Counter(), set()
    for k in sorted(kernels, key=lambda k: k.start) if trace.isolated else []:
        if not k.comm and id(k) not in mine:
            key = (k.name, k.shape)
            if (*key, seen[key]) not in trace.isolated:
                extra.add(id(k))
            seen[key] += 1
    return extra


def blocking(trace, comm, kernels, mine):
    """Microseconds of the exposed communication (`comm` less the compute kernels) that a dependency proves cost the
    step: each exposed stretch ended by a compute kernel (not the wrapper's) starting within BLOCKING_US of its end,
    launched before that end: it was queued and waited (Megatron Bridge's "blocking" communication; the exposed
    communication is its upper bound). A kernel whose launch the trace does not hold proves nothing."""
    compute = sorted((k for k in kernels if not k.comm and id(k) not in mine), key=lambda k: k.start)
    starts = [k.start for k in compute]
    cover = Cover((k.start, k.end) for k in kernels if not k.comm)  # as the exposed communication's
    total = 0.0
    for a, b in comm:
        pieces, at = [], a
        for c, d in cover[bisect.bisect_right(cover.ends, a):]:
            if c >= b:
                break
            if c > at:
                pieces.append((at, c))
            at = max(at, d)
        if at < b:
            pieces.append((at, b))
        for x, y in pieces:
            i = bisect.bisect_left(starts, y)
            if i < len(compute) and compute[i].start - y <= BLOCKING_US and \
                    -math.inf < trace.launches.get(compute[i].correlation, math.inf) < y:
                total += y - x
    return total


def inside(t, cover):
    """Whether time `t` lies in the disjoint sorted intervals `cover`."""
    i = bisect.bisect_right(cover.ends, t)
    return i < len(cover) and cover[i][0] <= t


def host_comm(calls, start, end, busy):
    """Microseconds within [start, end) the wrapper's host calls (`calls`: the cover of trace_read.WRAPPER_CALLS and
    the ends of WRAPPING_CALLS) took while the GPU ran nothing (`busy`: the cover of every kernel, memset and copy of
    the rank): the GPU waited for its host, which was in the wrapper's code. `start` is the step marker's where there
    is one: the host's time before the step's first kernel is the step's too."""
    clipped = []
    for i in range(bisect.bisect_right(calls.ends, start), len(calls)):  # no copy of the rest: a step's calls only
        a, b = calls[i]
        if a >= end:
            break
        clipped.append((max(a, start), min(b, end)))
    return minus(clipped, busy)


def step_stats(trace):
    """Per step of one rank: its span, communication, compute, exposed communication, slowdown, the wrapper's own
    kernels (those its host calls launched: DDP's copies into its buckets and its division, FSDP2's copy-in and
    copy-out; in a replayed step those of their signatures) where no compute kernel ran, left out of the slowdown,
    and the host time of the wrapper's calls while the GPU idled."""
    if native_figures(trace):  # the native reader computed them (trace_reader/step_figures.cpp), the same doubles
        return trace.native.step_stats(trace.rank)
    medians, comm_all = alone_medians(trace)
    busy = Cover((k.start, k.end) for k in trace.kernels)
    calls = Cover(trace.wrapper)
    signatures = wrapper_signatures(trace, calls)
    marks = {number: start for number, start, _ in trace.steps}
    stats = []
    for number, kernels in steps_of(trace):
        comm = Cover((k.start, k.end) for k in kernels if k.comm)
        compute = Cover((k.start, k.end) for k in kernels if not k.comm)
        mine = {id(k) for k in kernels if not k.comm and (
            (k.name, k.shape) in signatures if k.correlation in trace.graph_launches
            else inside(trace.launches.get(k.correlation, -1.0), calls))}
        mine |= unmatched(trace, kernels, mine)
        # The wrapper's kernels where no compute kernel of the job's own ran: a collective beside them hides in them
        # (the exposed communication leaves that time out), so they hold it on the step's path.
        others = Cover((k.start, k.end) for k in kernels if not k.comm and id(k) not in mine)
        slowdown = slowed = 0.0
        for k, base in baselines(trace, kernels, mine, medians, comm_all):
            slowdown += (k.end - k.start) - base
            slowed += base
        buckets = [(k.collective or k.name, k.nbytes, (k.end - k.start) / 1e3, k.start, k.end)
                   for k in sorted(kernels, key=lambda k: k.start) if k.comm]
        start, end = min(k.start for k in kernels), max(k.end for k in kernels)
        host = host_comm(calls, min(start, marks.get(number, start)), end, busy) / 1e3
        gap = 0.0 if math.isnan(trace.compute_only_idle) else max(
            0.0, (idle(kernels) - trace.compute_only_idle) / 1e3 - host)
        stats.append(StepStats(trace.rank, number, start, end, length(comm) / 1e3, length(compute) / 1e3,
                               minus(comm, compute) / 1e3, slowdown / 1e3, slowed / 1e3, buckets,
                               host_ms=host, idle_added_ms=gap,
                               wrapper_gpu_ms=minus(Cover((k.start, k.end) for k in kernels if id(k) in mine),
                                                    others) / 1e3,
                               replayed=replayed(trace, kernels),
                               blocking_ms=blocking(trace, comm, kernels, mine) / 1e3))
    return stats


def native_figures(trace):
    """Whether the native reader's figures of `trace` stand (no compute-only baseline given since it was read)."""
    native = getattr(trace, "native", None)
    return native is not None and native.computed and not trace.isolated and math.isnan(trace.compute_only_idle)


def step_parts(trace):
    """{step: ([(start, end)] of its collectives in start order, its compute kernels' union as a Cover or Spans)} of one
    rank: where the native reader measured it, read from its columns (no list built per interval)."""
    if native_figures(trace):
        return trace.native.step_parts()
    return {n: ([(k.start, k.end) for k in sorted((k for k in ks if k.comm), key=lambda k: k.start)],
                Cover((k.start, k.end) for k in ks if not k.comm)) for n, ks in steps_of(trace)}


def compute_launched(trace, start, end):
    """(host time, ms) of each compute kernel of `trace` launched from host time `start` to `end`, in its order."""
    if native_figures(trace):
        return trace.native.compute_launched(start, end)
    found = []
    for k in trace.kernels:
        host = trace.launches.get(k.correlation)
        if host is not None and start <= host < end and not k.comm:
            found.append((host, (k.end - k.start) / 1e3))
    return found


def kernel_span(trace):
    """(kernels, earliest start, latest end) of one rank."""
    if native_figures(trace):
        return trace.native.span()
    if not trace.kernels:
        return 0, None, None
    return len(trace.kernels), min(k.start for k in trace.kernels), max(k.end for k in trace.kernels)


def peer_waits(traces, stats):
    """Sets each step's wait_ms: the exposed time its rank's collectives spent waiting for the last rank to reach
    them (a collective moves no data before every rank has launched it). The k-th collective of a step is the same
    on every rank; the ranks' clocks are aligned by the collectives' ends (a collective ends on every rank at once),
    the median offset per rank. Ranks whose steps launched other counts of collectives, and a single rank, wait 0."""
    if len(traces) < 2:  # one rank: nothing to wait for
        return
    steps = {t.rank: step_parts(t) for t in traces}
    numbers = set.intersection(*(set(s) for s in steps.values())) if len(steps) > 1 else set()
    numbers = {n for n in numbers if len({len(steps[r][n][0]) for r in steps}) == 1}
    if not numbers:
        return
    first = min(steps)
    offset = {r: float(np.median([a[1] - b[1] for n in numbers for a, b in zip(steps[r][n][0], steps[first][n][0])]
                                 or [0.0])) for r in steps}
    latest = {}  # step -> per collective, the last rank's start on the first rank's clock (once, not once a rank)
    for s in stats:
        if s.step not in numbers:
            continue
        if s.step not in latest:
            latest[s.step] = [max(steps[r][s.step][0][i][0] - offset[r] for r in steps)
                              for i in range(len(steps[first][s.step][0]))]
        comm, compute = steps[s.rank][s.step]
        waits = []
        for (start, end), last in zip(comm, latest[s.step]):
            last += offset[s.rank]
            if last > start:
                waits.append((start, min(last, end)))
        s.wait_ms = minus(union(waits), compute) / 1e3
