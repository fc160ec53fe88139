"""ob-analyze's timeline (analysis.timeline.csv: every kernel of every step, compute and comm lanes, times from the
first step) and its Gantt of one step. A rank the native reader measured (trace_native.NativeTrace) has its rows
written by ob_trace_columns --timeline from its columns and its one step's rows taken from them, not kernel by kernel
here; any other rank's rows are built from its kernels (trace_stats.steps_of). Either way the file is what pandas'
to_csv writes of the rows (the equality test reads both)."""
import concurrent.futures
import importlib
import shutil
import tempfile
import threading

import pandas as pd

from overlap_bench.trace import trace_native
from overlap_bench.trace import trace_ranks
from overlap_bench.trace import trace_stats


TIMELINE = ["rank", "lane", "name", "iter", "chunk", "start_us", "end_us"]


def timeline_rows(trace, origin, numbers=None):
    """One rank's timeline rows: every kernel of every step (of those in `numbers`, where given), compute and comm
    lanes, times from `origin`."""
    rows = []
    for number, kernels in trace_stats.steps_of(trace):
        if numbers is not None and number not in numbers:
            continue
        bucket = 0
        for k in sorted(kernels, key=lambda k: k.start):
            lane = "trace:comm" if k.comm else "trace:compute"
            rows.append((trace.rank, lane, (k.collective or "comm") if k.comm else "compute", number,
                         bucket if k.comm else -1, k.start - origin, k.end - origin))
            bucket += int(k.comm)
    return rows


def timeline(traces, stats):
    """This suite's timeline rows: every kernel of every step, compute and comm lanes, times from the first step."""
    origin = min(s.start for s in stats)
    return pd.DataFrame([row for trace in traces for row in timeline_rows(trace, origin)], columns=TIMELINE)


def write_timeline(traces, stats, path):
    """analysis.timeline.csv: timeline()'s rows as to_csv writes them; a rank the native reader measured has its
    rows written by it (ob_trace_columns --timeline), from its columns, not kernel by kernel here: those processes
    run side by side (one per core), each into a temporary file, copied in rank order."""
    origin = min(s.start for s in stats)
    native = [t for t in traces if trace_stats.native_figures(t)]
    pool = concurrent.futures.ThreadPoolExecutor(trace_ranks.workers(native)) if native else None
    rows = {}
    try:
        rows.update((id(t), pool.submit(native_rows, t, origin)) for t in native)
        with open(path, "w", newline="") as out:
            out.write(",".join(TIMELINE) + "\n")
            for trace in traces:
                if id(trace) in rows:
                    out.flush()
                    with rows.pop(id(trace)).result() as written:
                        shutil.copyfileobj(written, out.buffer)
                else:
                    pd.DataFrame(timeline_rows(trace, origin), columns=TIMELINE).to_csv(out, header=False,
                                                                                        index=False)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        for left in rows.values():  # a failure: the files written, closed (and so removed)
            if not left.cancelled() and left.exception() is None:
                left.result().close()


def native_rows(trace, origin):
    """A temporary file (removed once closed) holding `trace`'s timeline rows, at its start."""
    written = tempfile.TemporaryFile()
    try:
        trace_native.write_timeline(trace, origin, written)
    except BaseException:
        written.close()
        raise
    written.seek(0)
    return written


def step_frame(traces, stats, number):
    """The timeline of one step (every rank's), as ob_csv.load_timeline reads it back: what the Gantt draws."""
    origin = min(s.start for s in stats)
    rows = []
    for trace in traces:
        if trace_stats.native_figures(trace):
            rows += [(trace.rank, *row[:4], row[4] - origin, row[5] - origin)
                     for row in trace.native.step_rows({number})]
        else:
            rows += timeline_rows(trace, origin, {number})
    frame = pd.DataFrame(rows, columns=TIMELINE)
    frame["point"] = ""
    frame["duration_us"] = frame["end_us"] - frame["start_us"]
    return frame


def import_beside():
    """The Gantt's drawing code (matplotlib: most of ob-analyze's own CPU time on a rank) imported in a thread of its
    own, started: while the readers run, on one rank a core they leave idle. Returns the thread (join it before
    drawing; draw's own import then finds the module, or raises what the import raised)."""
    def load():
        try:
            importlib.import_module("overlap_bench.report.plot_gantt")
        except Exception:  # draw's own import, in the main thread, says what failed
            pass

    thread = threading.Thread(target=load, name="ob-analyze-import")
    thread.start()
    return thread


def draw(folder, traces, stats):
    """One step's Gantt (the second traced, or the only one) from the timeline's rows of that step alone, by
    ob-plot-gantt's own code."""
    from overlap_bench.report import plot_gantt

    steps = sorted({s.step for s in stats})
    plot_gantt.plot(step_frame(traces, stats, steps[min(1, len(steps) - 1)]), folder / "analysis.png",
                    "your job, one traced step")


def write_and_draw(folder, traces, stats):
    """analysis.timeline.csv (write_timeline) and analysis.png (draw) into `folder`: the timeline's processes run
    while the Gantt is drawn."""
    with concurrent.futures.ThreadPoolExecutor(1) as beside:
        timeline = beside.submit(write_timeline, traces, stats, folder / "analysis.timeline.csv")
        draw(folder, traces, stats)
        timeline.result()
