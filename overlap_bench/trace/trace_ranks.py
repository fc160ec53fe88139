"""Every rank's trace read and measured, one worker per core: the native readers (ob_trace_columns, one process
each) run side by side, at most one per core, before their columns are read back; the per-rank step figures
(trace_stats.step_stats, in C++ where the native reader computed them) follow in this process, each rank an
independent task whose result is its StepStats (small: a few numbers a step); the cross-rank parts (peer_waits, the
slowest rank) are computed after, from those. A progress line on stderr where a read is long."""
import concurrent.futures
import os
import pathlib
import sys
import time

from overlap_bench.core import ob_tool
from overlap_bench.trace import trace_formats, trace_native, trace_read, trace_stats

# A read this long (seconds) or longer says how far it is.
PROGRESS_S = 5.0


def workers(tasks):
    return max(1, min(len(tasks), len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else
                      os.cpu_count() or 1))


def read_all(paths):
    """Every rank the files hold, in order (trace_read.read of each), the native reads run side by side: each rank's
    columns are taken up here as soon as its own reader is done, while the later ranks' readers run."""
    started = time.monotonic()
    # keyed as trace_read.read names the file (./rank0.json as rank0.json), so that no rank is read twice
    kineto = [str(pathlib.Path(p)) for p in paths if trace_formats.choose(p).name == "kineto-json"]
    pool = None
    if workers(kineto) > 1 and trace_native.binary() is not None:
        pool = concurrent.futures.ThreadPoolExecutor(workers(kineto))  # each thread waits on its process
        trace_native.PREFETCHED.update((path, pool.submit(trace_native.columns, path)) for path in kineto)
    traces = []
    try:
        for done, path in enumerate(paths, 1):
            traces += trace_read.read(path)
            if time.monotonic() - started > PROGRESS_S:
                print(f"ob-analyze: read {done} of {len(paths)} traces in {time.monotonic() - started:.0f} s",
                      file=sys.stderr, flush=True)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)  # a refused rank: the readers not started are not started
        trace_native.PREFETCHED.clear()
    return traces


def stats_all(traces):
    """Every rank's StepStats, in rank order (trace_stats.step_stats of each), in this process: where the native
    reader computed a rank's figures they are a few numbers a step read from its columns; the ranks Python measures
    (steps from repetition, compute-only ranges) are measured one after another. No forked workers: a worker forked
    beside the reader's threads hung on a lock held at the fork (round 6: an 8-rank run, and ob-analyze of a probe
    folder on a loaded CI machine, waiting for ever)."""
    return [s for trace in traces for s in trace_stats.step_stats(trace)]


def check_one_job(traces):
    """The ranks' traces are of one job: each has GPU kernels, one world size, distinct ranks, and their traced
    windows overlap in time (traces of two jobs were taken apart). A usage error naming the file otherwise."""
    spans = [trace_stats.kernel_span(t) for t in traces]
    for trace, (kernels, _, _) in zip(traces, spans):
        if not kernels:
            raise ob_tool.UsageError(f"{trace.path}: a trace without GPU kernels (profile with "
                                    "ProfilerActivity.CUDA)")
    worlds = {t.world for t in traces}
    if len(worlds) > 1:
        raise ob_tool.UsageError(f"{traces[-1].path}: ranks from different jobs (world sizes {sorted(worlds)})")
    ranks = [t.rank for t in traces]
    duplicate = next((t for t in traces if ranks.count(t.rank) > 1), None)
    if duplicate is not None:
        raise ob_tool.UsageError(f"{duplicate.path}: rank {duplicate.rank} is given twice")
    windows = [(t.start_ns / 1e3 + first, t.start_ns / 1e3 + last) for t, (_, first, last) in zip(traces, spans)]
    latest_start, earliest_end = max(w[0] for w in windows), min(w[1] for w in windows)
    if latest_start > earliest_end:
        late = traces[max(range(len(traces)), key=lambda i: windows[i][0])]
        raise ob_tool.UsageError(f"{late.path}: ranks from different jobs (its kernels ran "
                                f"{(latest_start - earliest_end) / 1e6:.3g} s after another rank's ended)")
