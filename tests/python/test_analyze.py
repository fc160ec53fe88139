"""ob-analyze (issue 52) on the traces shipped in tests/data/traces (PyTorch DDP and FSDP2 of phase 4's MLP on 2 and
4 H200s, made by overlap_bench/trace/trace_job.py) and on synthetic traces whose numbers are known: steps from the
profiler's markers or from the kernel sequence, the share of communication hidden, the compute slowdown, the buckets,
the timeline in this suite's schema, the advice, the bad inputs, and memory that follows the kernels, not the file."""
import dataclasses
import gzip
import json
import math
import subprocess
import sys

import pandas as pd
import numpy as np
import pytest

from conftest import REPO, tool
from overlap_bench.trace import advice as advice_module
from overlap_bench.core import ob_csv
from overlap_bench.trace import trace_read, trace_stats

DATA = REPO / "tests" / "data" / "traces"
ANALYZE = tool("analyze.py")


def analyze(*args, timeout=300):
    return subprocess.run([*ANALYZE, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def kineto(path, kernels, steps, rank=0, world=2, base=0, extra=(), launch="cudaLaunchKernel"):
    """A minimal PyTorch profiler trace: kernels (start us, duration us, name, nccl collective or "", bytes) each
    launched by a runtime call (`launch`, or `launch(i, step start)` giving the i-th kernel's call and host time) 1 us
    after its step's start, the steps as ProfilerStep markers (start, end)."""
    events = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "ts": a, "dur": b - a}
              for n, (a, b) in enumerate(steps)]
    for i, (start, dur, name, collective, nbytes) in enumerate(kernels):
        step = next(a for a, b in steps if a <= start < b)
        args = {"correlation": i, "stream": 9 if collective else 7, "grid": [8, 1, 1], "block": [128, 1, 1]}
        if collective:
            args.update({"Collective name": collective, "In msg nelems": nbytes // 4, "dtype": "Float"})
        events.append({"ph": "X", "cat": "kernel", "name": name, "ts": start, "dur": dur, "args": args})
        call, ts = launch(i, step) if callable(launch) else (launch, step + 1)
        events.append({"ph": "X", "cat": "cuda_runtime", "name": call, "ts": ts, "dur": 1, "args": {"correlation": i}})
    events += list(extra)
    text = json.dumps({"schemaVersion": 1, "deviceProperties": [{"name": "Test GPU"}], "baseTimeNanoseconds": base,
                       "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
                       "traceEvents": events})
    path.write_text(text)
    return path


def two_steps(path, rank=0, base=0):
    """Two steps of 100 us: a GEMM alone (10 us), the same GEMM beside an all-reduce (13 us), the all-reduce 20 us
    of which 13 us run beside the GEMM: 7 us exposed, the GEMM 30 % slower beside it."""
    kernels = []
    for start in (0.0, 1000.0):
        kernels += [(start + 0, 10, "gemm", "", 0), (start + 20, 13, "gemm", "", 0),
                    (start + 20, 20, "ncclDevKernel_AllReduce", "allreduce", 4 << 20)]
    return kineto(path, kernels, [(0.0, 100.0), (1000.0, 1100.0)], rank=rank, base=base)


def test_the_shares_are_exact_on_a_trace_whose_numbers_are_known(tmp_path):
    trace = trace_read.read(two_steps(tmp_path / "t.json"))[0]
    stats = trace_stats.step_stats(trace)
    assert [s.step for s in stats] == [0, 1]
    first = stats[0]
    assert math.isclose(first.comm_ms, 0.020) and math.isclose(first.exposed_ms, 0.007)
    assert math.isclose(first.hidden_pct, 65.0) and math.isclose(first.slowdown_ms, 0.003)
    assert math.isclose(first.slowdown_ms / first.slowed_ms, 0.3)
    assert first.buckets[0][:2] == ("allreduce", 4 << 20) and math.isclose(first.step_ms, 0.040)


def test_the_wait_for_a_later_rank_is_measured_across_clocks(tmp_path):
    """Rank 0 launches each step's all-reduce 30 us before rank 1 (nothing beside it), on a clock 5 ms behind rank
    1's: both end together, so rank 0 waited 30 us of its exposed 70 and rank 1 none; the clocks are aligned by the
    collectives' ends."""
    def job(rank, launch):
        kernels = [(s + launch, 70 - launch, "ncclDevKernel_AllReduce", "allreduce", 4 << 20) for s in (0.0, 1000.0)]
        kernels += [(s + 80, 10, "gemm", "", 0) for s in (0.0, 1000.0)]
        steps = [(0.0, 200.0), (1000.0, 1200.0)]
        return trace_read.read(kineto(tmp_path / f"r{rank}.json", kernels, steps, rank=rank))[0]

    traces = [job(0, 0.0), job(1, 30.0)]
    for trace in traces[1:]:  # rank 1's clock: 5 ms ahead
        for k in trace.kernels:
            k.start, k.end = k.start + 5000, k.end + 5000
    stats = [s for trace in traces for s in trace_stats.step_stats(trace)]
    trace_stats.peer_waits(traces, stats)
    waits = {(s.rank, s.step): (s.wait_ms, s.exposed_ms) for s in stats}
    assert all(math.isclose(waits[(0, n)][0], 0.030) and math.isclose(waits[(0, n)][1], 0.070)
               and waits[(1, n)][0] == 0 for n in (0, 1)), waits
    alone = trace_stats.step_stats(traces[0])
    trace_stats.peer_waits(traces[:1], alone)  # one rank: nothing to wait for
    assert all(s.wait_ms == 0 for s in alone)


def test_the_host_time_of_the_wrapper_s_calls_counts_only_where_the_gpu_waited(tmp_path):
    """A step whose GPU runs a GEMM 0-10 us and another 70-80 us: DDP's reducer copies on the host 5-45 us and its
    all-reduce call 50-60 us (GPU idle but 5-10 us: 45 us), the user's own op 60-70 us (not the wrapper's: not
    counted), and a reducer call after the step's last kernel (outside its span: not counted)."""
    calls = [("cpu_op", "torch::distributed::reducer::mul_out", 5, 40), ("cpu_op", "c10d::allreduce_", 50, 10),
             ("cpu_op", "aten::mm", 60, 10), ("user_annotation", "FSDP::post_backward_reduce", 85, 10)]
    extra = [{"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur} for cat, name, ts, dur in calls]
    kernels = [(0.0, 10, "gemm", "", 0), (70.0, 10, "gemm", "", 0)]
    trace = trace_read.read(kineto(tmp_path / "t.json", kernels, [(0.0, 100.0)], extra=extra))[0]
    assert len(trace.wrapper) == 3
    (step,) = trace_stats.step_stats(trace)
    assert math.isclose(step.host_ms, 0.045) and step.exposed_ms == 0


def test_ddp_s_forward_is_the_wrapper_s_only_before_and_after_the_module_s_own_operators(tmp_path):
    """DDP's forward (host 10-70 us on thread 1) wraps the module's operators (20-28 and 29-50 us on thread 1; one on
    thread 2 is another thread's): its own time is 10-20 and 50-70 us. The GPU runs 30-60 and 100-110 us: 10 us of
    each end while it waited; the first counts though it comes before the step's first kernel (the step marker's
    start is the host's)."""
    ops = [("user_annotation", "DistributedDataParallel.forward", 10, 60, 1), ("cpu_op", "aten::linear", 20, 8, 1),
           ("cpu_op", "aten::relu", 29, 21, 1), ("cpu_op", "aten::add", 55, 10, 2),
           ("gpu_user_annotation", "DistributedDataParallel.forward", 30, 30, 7)]
    extra = [{"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "tid": tid} for cat, name, ts, dur, tid in ops]
    kernels = [(30.0, 30, "gemm", "", 0), (100.0, 10, "gemm", "", 0)]
    trace = trace_read.read(kineto(tmp_path / "t.json", kernels, [(0.0, 200.0)], extra=extra))[0]
    assert sorted(trace.wrapper) == [(10, 20), (50, 70)] and not trace.ops
    (step,) = trace_stats.step_stats(trace)
    assert math.isclose(step.host_ms, 0.020)


def test_without_step_markers_the_kernel_sequence_gives_the_steps(tmp_path):
    kernels = [(s + o, 5, name, "", 0) for s in (0, 100, 200, 300) for o, name in ((0, "a"), (10, "b"), (20, "c"))]
    trace = trace_read.read(kineto(tmp_path / "t.json", kernels, [(0.0, 1000.0)]))[0]
    trace.steps, trace.launches = [], {}
    steps = trace_stats.steps_of(trace)
    assert len(steps) == 4 and all([k.name for k in ks] == ["a", "b", "c"] for _, ks in steps)


def test_without_markers_a_step_whose_layers_repeat_is_one_step_not_a_layer(tmp_path):
    """Three steps of 19 GEMMs and an update on the compute stream (a period of one GEMM repeats 90 % of the names),
    with an all-reduce on another stream at a different place each step: the steps are the 20-kernel periods, each
    holding its all-reduce."""
    kernels = []
    for step in range(3):
        base = step * 1000.0
        kernels += [(base + 10 * i, 8, "gemm", "", 0) for i in range(19)] + [(base + 190, 8, "update", "", 0)]
        kernels.append((base + 50 + 40 * step, 30, "ncclDevKernel_AllReduce", "allreduce", 4 << 20))
    trace = trace_read.read(kineto(tmp_path / "t.json", kernels, [(0.0, 3000.0)]))[0]
    trace.steps, trace.launches = [], {}
    steps = trace_stats.steps_of(trace)
    assert [len(ks) for _, ks in steps] == [21, 21, 21]
    assert all(sum(k.comm for k in ks) == 1 and ks[0].start == 1000.0 * n for n, ks in steps)


def test_a_ddp_trace_of_two_ranks_end_to_end(tmp_path):
    files = sorted((DATA / "2gpu").glob("ddp-*.rank*.trace.json.gz"))
    result = analyze(*files, "--out", tmp_path / "a")
    assert result.returncode == 0, result.stderr
    summary = ob_csv.load_summary(tmp_path / "a" / "analysis.csv").set_index("mode")
    assert summary.loc["overlap", "system"] == "pytorch-ddp" and summary.loc["overlap", "ranks"] == 2
    assert summary.loc["overlap", "iters"] == 2  # 3 profiled steps, the first left out
    assert 0 <= summary.loc["overlap", "overlap_pct"] <= 100
    # DDP's buckets of the 1024x8x256 MLP at 25 MB: the last layer alone (the 1 MiB first bucket), then the rest
    buckets = pd.read_csv(tmp_path / "a" / "analysis.buckets.csv")
    first = buckets[(buckets["rank"] == 0) & (buckets["step"] == buckets["step"].min())]
    assert sorted(first["bytes"]) == [4 << 20, 28 << 20] and set(first["collective"]) == {"allreduce"}
    timeline = ob_csv.load_timeline(tmp_path / "a" / "analysis.timeline.csv")
    assert set(timeline["lane"]) == {"trace:compute", "trace:comm"} and set(timeline["rank"]) == {0, 1}
    meta = json.loads((tmp_path / "a" / "analysis.meta.json").read_text())
    assert len(meta["traces"]) == 2 and all(len(t["sha256"]) == 64 for t in meta["traces"])
    assert "For DDP, the planner's model expects bucket_cap_mb=" in result.stdout or \
        "No bucket advice" in result.stdout
    assert (tmp_path / "a" / "analysis.png").stat().st_size > 5000
    assert "% of it hidden behind compute" in result.stdout
    # A host-paced step (its GPU idle most of the time): DDP's calls on the host hold the GPU back; the number is
    # the slowest rank's median over the two kept steps (rank 1's 0.523 and 0.562 ms, tests/data's traces).
    assert 0.3 < summary.loc["overlap", "host_comm_ms"] < 0.7 and "while the GPU waited for them" in result.stdout
    assert "its host paces the step, and the profiler's own host work lengthens such a step" in result.stdout
    assert summary.loc["overlap", "replayed_share"] == 0 and "replayed from CUDA graphs" not in result.stdout


def test_fsdp2_and_four_ranks(tmp_path):
    fsdp = analyze(*sorted((DATA / "2gpu").glob("fsdp2-*.gz")), "--out", tmp_path / "f")
    assert fsdp.returncode == 0, fsdp.stderr
    collectives = set(pd.read_csv(tmp_path / "f" / "analysis.buckets.csv")["collective"])
    assert {"allgather", "reduce_scatter"} <= {c.replace("_into_tensor", "").replace("_base", "").strip("_")
                                                for c in collectives} or len(collectives) >= 2
    four = analyze(*sorted((DATA / "4gpu").glob("*.gz")), "--out", tmp_path / "4")
    assert four.returncode == 0, four.stderr
    assert set(pd.read_csv(tmp_path / "4" / "analysis.ranks.csv")["rank"]) == {0, 1, 2, 3}


def test_the_advice_rests_on_the_planner(tmp_path, build_dir):
    predictor = build_dir / "phase4_chunked_nccl" / "phase4_predict"
    if not predictor.exists():
        pytest.skip("phase4_predict is not built")
    files = sorted((DATA / "2gpu").glob("ddp-*.gz"))
    result = analyze(*files, "--out", tmp_path / "a", "--predictor", predictor)
    assert result.returncode == 0, result.stderr
    advice = json.loads((tmp_path / "a" / "analysis.meta.json").read_text())["advice"]
    assert advice["ddp_bucket_cap_mb"] > 0 and advice["ddp_predicted_ms"] > 0 and advice["gradients"] == 8
    assert "bucket_cap_mb=" in advice["sentence"] and "GB/s" in advice["sentence"]
    assert advice["least_cap_mb"] == (25 if advice["gpu_busy"] < advice_module.HOST_PACED else 0), advice


def test_where_the_host_paces_the_step_the_advice_keeps_to_ddp_s_default_or_larger(build_dir):
    """The shipped traces' steps made to span their kernels' busy time over 0.9 (a GPU kept busy) and over 0.2 (a GPU
    idle, waiting for its host, most of the step): the advice is the model's own best in the first, among caps of at
    least 25 MB in the second, and says why."""
    predictor = build_dir / "phase4_chunked_nccl" / "phase4_predict"
    if not predictor.exists():
        pytest.skip("phase4_predict is not built")
    traces = [rank for path in sorted((DATA / "2gpu").glob("ddp-*.gz")) for rank in trace_read.read(path)]
    stats = [s for trace in traces for s in trace_stats.step_stats(trace)]

    def busy(share):  # each step ends when its kernels' busy time is `share` of it (times in us)
        return [dataclasses.replace(s, end=s.start + (s.compute_ms + s.exposed_ms) * 1e3 / share) for s in stats]

    free, paced = (advice_module.advise(traces, busy(share), 2, predictor) for share in (0.9, 0.2))
    assert free["gpu_busy"] == pytest.approx(0.9) and paced["gpu_busy"] == pytest.approx(0.2)
    assert free["least_cap_mb"] == 0 and "host paces" not in free["sentence"], free
    assert paced["least_cap_mb"] == 25 and paced["ddp_bucket_cap_mb"] >= 25, paced
    assert "its host paces it" in paced["sentence"]
    # A wait for a later rank is not work: the same busy steps, their exposed time all such a wait, are host-paced.
    mine = [s for s in busy(0.9) if s.rank == stats[0].rank]
    waited = [dataclasses.replace(s, wait_ms=s.exposed_ms) for s in mine]
    assert advice_module.gpu_busy(mine) == pytest.approx(0.9)
    assert advice_module.gpu_busy(waited) == pytest.approx(float(np.median([s.compute_ms / s.step_ms for s in mine])))
    assert advice_module.gpu_busy(waited) < 0.9


@pytest.mark.parametrize("case", ["html", "truncated", "no-kernels", "other-job", "folder", "dev-zero", "same-rank"])
def test_what_is_not_a_trace_is_refused_and_nothing_is_written(tmp_path, case):
    good = two_steps(tmp_path / "good.json")
    bad = tmp_path / "bad.json"
    if case == "html":
        bad.write_text("<!doctype html><html><body>a trace</body></html>")
    elif case == "truncated":
        bad.write_text(good.read_text()[:300])
    elif case == "no-kernels":
        kineto(bad, [], [(0.0, 100.0)], rank=1)
    elif case == "other-job":
        two_steps(bad, rank=1, base=3_600_000_000_000)  # an hour later
    elif case == "folder":
        bad = tmp_path
    elif case == "dev-zero":
        bad = "/dev/zero"
    elif case == "same-rank":
        two_steps(bad, rank=0)
    result = analyze(good, bad, "--out", tmp_path / "out")
    named = {"no-kernels": "without GPU kernels", "other-job": "different jobs", "folder": "a regular file",
             "dev-zero": "a regular file", "same-rank": "given twice"}.get(case, "not a profiler trace")
    assert result.returncode == 2 and named in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_a_phase4_timeline_is_read_too(tmp_path):
    rows = ["rank,lane,name,iter,chunk,start_us,end_us"]
    for it in range(2):
        base = it * 1000
        rows += [f"0,overlap:compute,backward,{it},1,{base},{base + 100}", f"0,overlap:comm,allreduce,{it},0,"
                 f"{base + 50},{base + 130}"]
    (tmp_path / "p4.timeline.csv").write_text("\n".join(rows) + "\n")
    result = analyze(tmp_path / "p4.timeline.csv", "--out", tmp_path / "a")
    assert result.returncode == 0, result.stderr
    row = pd.read_csv(tmp_path / "a" / "analysis.csv").set_index("mode").loc["overlap"]
    assert row["system"] == "overlap-bench" and math.isclose(row["overlap_pct"], 100 * 50 / 80)
    assert "host paces" not in result.stdout  # phase 4's own events: no profiler to lengthen the step


def test_memory_follows_the_kernels_not_the_file(tmp_path):
    """A trace of ~60 MB, most of it host events the analysis drops: streamed, the process stays far below what
    loading the file whole takes (json.load of it: several hundred MB)."""
    source = json.loads(gzip.open(sorted((DATA / "2gpu").glob("ddp-*.rank0.*"))[0]).read())
    events = source.pop("traceEvents")
    span = max(e.get("ts", 0) + e.get("dur", 0) for e in events) - min(e["ts"] for e in events if "ts" in e)
    path = tmp_path / "big.json"
    with open(path, "w") as out:
        out.write(json.dumps(source)[:-1] + ', "traceEvents": [')
        for copy in range(int(60e6 / len(json.dumps(events)))):
            for index, event in enumerate(events):
                moved = dict(event, ts=event["ts"] + copy * span * 1.1) if "ts" in event else dict(event)
                if "correlation" in (moved.get("args") or {}):
                    moved["args"] = dict(moved["args"], correlation=moved["args"]["correlation"] + copy * 10 ** 7)
                if moved.get("name", "").startswith("ProfilerStep#"):
                    moved["name"] = f"ProfilerStep#{copy * 10 + int(moved['name'].split('#')[1])}"
                out.write(("," if copy or index else "") + json.dumps(moved))
        out.write("]}")
    result = subprocess.run([sys.executable, "-c", "import resource, runpy, sys; code = 0\ntry:\n    "
                             "runpy.run_module('overlap_bench.trace.analyze', run_name='__main__', alter_sys=True)\n"
                             "except SystemExit as e:\n    code = e.code\nprint('maxrss', "
                             "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\nsys.exit(code)", path, "--out",
                             tmp_path / "a"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    rss_mb = int(result.stdout.split("maxrss")[-1]) / 1024
    assert path.stat().st_size > 50e6 and rss_mb < 400, rss_mb


def test_a_trace_with_no_collective_writes_its_buckets_header_alone(tmp_path):
    """One rank's job (its collectives launch no kernel): the buckets table holds no row, but its columns, so that
    every reader of a published folder can parse it."""
    trace = tmp_path / "one.trace.json"
    kineto(trace, [(s, 10, "gemm", "", 0) for s in (0.0, 1000.0)], [(0.0, 100.0), (1000.0, 1100.0)], world=1)
    result = analyze(trace, "--out", tmp_path / "a")
    assert result.returncode == 0, result.stderr
    buckets = pd.read_csv(tmp_path / "a" / "analysis.buckets.csv")
    assert buckets.empty and list(buckets.columns) == ["rank", "step", "bucket", "collective", "bytes", "ms"]


def test_a_step_marker_with_no_kernel_in_it_is_no_step(tmp_path, monkeypatch):
    """A trace whose step marker holds no kernel (one found by fuzzing: its only event's category misspelt, no
    launching calls) has no step, in every way steps are found: none of them a step of no kernel (min() of nothing)."""
    from overlap_bench.trace import trace_native, trace_read, trace_stats

    monkeypatch.setenv(trace_native.ENVIRONMENT, "0")
    path = tmp_path / "rank0.trace.json"
    path.write_bytes((REPO / "tests" / "fuzz" / "corpus" / "trace" / "step-without-kernel.json").read_bytes())
    rank = trace_read.read_kineto(path)
    assert rank.steps and not rank.launches
    assert trace_stats.steps_of(rank) == [] and trace_stats.step_stats(rank) == []
