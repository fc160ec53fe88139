"""This suite's own runs read as a job's traces (ob-analyze): a phase 4 timeline CSV, and the Chrome trace a phase
binary (or ob_trace) writes beside it, its rows again. The overlapped mode's iterations are the steps, its compute
lane's events the compute and its comm lane's the collectives; the run's compute-only mode is the slowdown's baseline
(as a profiler trace's compute-only steps are: trace_read.set_apart_compute_only)."""
import re
import zlib

from overlap_bench.core import ob_tool
from overlap_bench.trace import trace_formats, trace_model

# The Chrome trace this suite's binaries (and ob_trace) write beside a timeline opens with this key (nlohmann-json
# sorts the keys); Kineto's opens with its schemaVersion.
OWN_TRACE_HEAD = b'{"displayTimeUnit":'


def read_timeline(path):
    """This suite's own timeline CSV (a phase 4 run; of a sweep, its first point): timeline_ranks."""
    from overlap_bench.core import ob_csv

    return timeline_ranks(ob_csv.load_timeline(path), path)


def read_own_trace(path):
    """The Chrome trace a phase binary (or ob_trace) wrote beside its timeline, back into the timeline's rows (a
    process is a rank, "rank R" or "POINT · rank R"; a thread a lane, its second track "LANE #2"): timeline_ranks."""
    import ijson

    try:  # streamed: memory follows the events kept, not what the file inflates to
        names, raw = {}, []
        with trace_model.open_trace(path) as source:
            for e in ijson.items(source, "traceEvents.item", use_float=True):
                if e.get("ph") == "M" and e.get("name") in ("process_name", "thread_name"):
                    names[(e["pid"], e.get("tid"))] = str(e["args"]["name"])
                elif e.get("ph") == "X":
                    ts, dur = float(e["ts"]), float(e["dur"])
                    if not (abs(ts) <= trace_model.MOST_US and 0 <= dur <= trace_model.MOST_US):
                        raise ValueError(f"event ts {ts} or dur {dur} outside what a trace holds")
                    raw.append((e["pid"], e["tid"], str(e["name"]), int(e["args"]["iter"]), int(e["args"]["chunk"]),
                                ts, ts + dur))
        rows = []
        for pid, tid, name, iteration, chunk, start, end in raw:
            point, _, rank = names[(pid, None)].rpartition(" · ")
            rows.append((int(rank.split()[-1]), re.sub(r" #\d+$", "", names[(pid, tid)]), name, iteration, chunk,
                         start, end, point))
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, ijson.JSONError, ijson.IncompleteJSONError,
            EOFError, zlib.error) as error:
        raise ob_tool.UsageError(f"{path}: not a trace this suite's binaries wrote ({str(error)[:120]!r})") from None
    import pandas as pd

    columns = ["rank", "lane", "name", "iter", "chunk", "start_us", "end_us", "point"]
    return timeline_ranks(pd.DataFrame(rows, columns=columns), path)


def timeline_ranks(frame, path):
    """A phase 4 run's timeline rows (of a sweep, its first point) as ranks: its overlapped mode's lanes, every
    iteration a step, the compute lane's events as compute and the comm lane's as collectives; the same events'
    median times in the run's compute-only mode, the baseline of their slowdown, and its iterations' idle time."""
    from overlap_bench.core import ob_csv

    frame = frame[frame["point"] == ob_csv.timeline_points(frame)[0]]  # a sweep's first point
    alone = frame[frame["lane"] == "compute:compute"]
    frame = frame[frame["lane"].str.startswith("overlap:") & ~frame["lane"].str.endswith(":host")]
    if not frame["lane"].str.endswith(":comm").any():
        raise ob_tool.UsageError(f"{path}: no overlapped iteration with communication in it (lane overlap:comm, "
                                 "as phase 4 writes it)")
    ranks = sorted(frame["rank"].unique())
    traces = []
    for rank in ranks:
        part = frame[frame["rank"] == rank]
        one = trace_model.RankTrace(str(path), rank=int(rank), world=len(ranks), system="overlap-bench")
        mine = alone[alone["rank"] == rank]
        alone_steps = [[trace_model.Kernel(e.start_us, e.end_us, e.name, 0) for e in events.itertuples()]
                       for _, events in mine.groupby("iter")]
        if alone_steps:
            trace_model.set_compute_only(one, alone_steps, "compute-only mode")
        for row in part.itertuples():
            comm = row.lane.endswith(":comm")
            one.kernels.append(trace_model.Kernel(row.start_us, row.end_us, row.name, 1 if comm else 0, "",
                                                 -1, row.name if comm else "", 0.0))
        for iteration, events in part.groupby("iter"):
            one.steps.append((int(iteration), float(events["start_us"].min()), float(events["end_us"].max())))
        traces.append(one)
    return traces


def _timeline_csv(head, path):
    """A CSV whose header names the timeline's columns (or any .csv: the timeline reader says what it lacks)."""
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace").strip().split(",")
    return {"rank", "lane", "start_us", "end_us"} <= set(first) or path.suffix == ".csv"


trace_formats.register("own-timeline-csv", _timeline_csv, read_timeline)
trace_formats.register("own-chrome-trace", lambda head, path: head.startswith(OWN_TRACE_HEAD), read_own_trace)
