"""ob-analyze on steps replayed from CUDA graphs (trace_job.py --graph, issue 52): said to be replayed, their wrapper
kernels told by the names and launch shapes its host calls launched in an eager step of the same trace, on synthetic
traces whose numbers are known and on real ones shipped in tests/data/traces (1gpu-graph-eager, 2gpu-graph)."""
import json
import math
import subprocess

import pandas as pd

from overlap_bench.core import ob_csv
from overlap_bench.trace import trace_read, trace_stats
from conftest import tool
from test_analyze import DATA, analyze, kineto, two_steps


def test_steps_replayed_from_cuda_graphs_are_said_to_be(tmp_path):
    """A step whose kernels one cudaGraphLaunch launched (trace_job.py --graph) is analysed as any other, and the
    verdict says that no host call tells the wrapper's kernels from the compute there."""
    kernels = []
    for start in (0.0, 1000.0):
        kernels += [(start + 0, 10, "gemm", "", 0), (start + 20, 13, "gemm", "", 0),
                    (start + 20, 20, "ncclDevKernel_AllReduce", "allreduce", 4 << 20)]
    path = kineto(tmp_path / "t.json", kernels, [(0.0, 100.0), (1000.0, 1100.0)], launch="cudaGraphLaunch")
    stats = trace_stats.step_stats(trace_read.read(path)[0])
    assert [s.replayed for s in stats] == [True, True] and math.isclose(stats[0].exposed_ms, 0.007)
    result = analyze(path, "--out", tmp_path / "a")
    assert result.returncode == 0, result.stderr
    assert ob_csv.load_summary(tmp_path / "a" / "analysis.csv").set_index("mode").loc["overlap", "replayed_share"] == 1
    assert "Its steps were replayed from CUDA graphs" in result.stdout
    assert not any(s.replayed for s in trace_stats.step_stats(trace_read.read(two_steps(tmp_path / "e.json"))[0]))


def test_replayed_steps_learn_the_wrapper_kernels_from_an_eager_step(tmp_path):
    """trace_job.py --graph profiles one eager step before the replays: the kernel its wrapper's host call launched
    there (name and launch shape) is the wrapper's in the replayed steps too, counted where no compute kernel ran
    (beside a collective as well: the exposed communication leaves that time out) and not in the slowdown; the
    eager step lends that and is not one of the job's steps."""
    kernels, steps = [], [(0.0, 100.0), (1000.0, 1100.0), (2000.0, 2100.0)]
    for start, _ in steps:  # the division beside the all-reduce, after the GEMM
        kernels += [(start + 0, 10, "gemm", "", 0), (start + 20, 13, "gemm", "", 0),
                    (start + 34, 5, "div", "", 0), (start + 20, 20, "ncclDevKernel_AllReduce", "allreduce", 4 << 20)]

    def launch(i, step):  # the eager step's div inside DDP's reducer call; every later kernel by one graph launch
        return ("cudaLaunchKernel", step + (3 if i == 2 else 1)) if step == 0 else ("cudaGraphLaunch", step + 1)
    reducer = {"ph": "X", "cat": "cpu_op", "name": "torch::distributed::reducer::mark_variable_ready", "ts": 2,
               "dur": 2}
    path = kineto(tmp_path / "t.json", kernels, steps, launch=launch, extra=[reducer])
    stats = trace_stats.step_stats(trace_read.read(path)[0])
    assert [s.step for s in stats] == [1, 2] and all(s.replayed for s in stats)
    one = stats[0]
    assert math.isclose(one.wrapper_gpu_ms, 0.005) and math.isclose(one.exposed_ms, 0.002)
    assert math.isclose(one.slowdown_ms, 0.003)  # the GEMM's 13 us against its 10 alone; the division left out
    result = analyze(path, "--out", tmp_path / "a")
    assert result.returncode == 0, result.stderr
    summary = ob_csv.load_summary(tmp_path / "a" / "analysis.csv").set_index("mode")
    assert math.isclose(summary.loc["overlap", "total_added_ms"], 0.010)
    assert "the wrapper's own kernels in them are those of the names and launch shapes" in result.stdout
    # Without step markers (a trace of CUDA activity only) the steps come from the kernel sequence: the eager one
    # lends its signatures there too and is not a step
    unmarked = trace_read.read(path)[0]
    unmarked.steps = []
    assert [len(ks) for _, ks in trace_stats.steps_of(unmarked)] == [4, 4]
    assert all(trace_stats.replayed(unmarked, ks) for _, ks in trace_stats.steps_of(unmarked))
    # Without the eager step, the division counts as compute: nothing tells it from the GEMMs
    bare = kineto(tmp_path / "b.json", kernels[4:], steps[1:], launch="cudaGraphLaunch")
    assert all(s.wrapper_gpu_ms == 0 for s in trace_stats.step_stats(trace_read.read(bare)[0]))


def test_a_real_replayed_trace_with_its_eager_step(tmp_path):
    """trace_job.py --graph as it now traces (one eager step, then three replays), DDP at 25 MB on 4096x16x512 on one
    H200 (tests/data/traces/1gpu-graph-eager; one rank: no collective moves data, DDP's own kernels are all it
    adds): the eager step lends the division's signature (one per 64 MiB bucket), the replays are the steps, and the
    added time stands within 10 % of the job's own step minus its compute-only step, measured without the profiler."""
    folder = DATA / "1gpu-graph-eager"
    trace = trace_read.read(next(folder.glob("*.trace.json.gz")))[0]
    signatures = trace_stats.wrapper_signatures(trace, trace_stats.Cover(trace.wrapper))
    assert len(signatures) == 1 and "AUnaryFunctor" in next(iter(signatures))[0]
    stats = trace_stats.step_stats(trace)
    assert len(stats) == 3 and all(s.replayed for s in stats) and min(s.step for s in stats) > min(
        n for n, _, _ in trace.steps)
    result = analyze(*folder.glob("*.trace.json.gz"), "--out", tmp_path / "a")
    assert result.returncode == 0, result.stderr
    summary = ob_csv.load_summary(tmp_path / "a" / "analysis.csv").set_index("mode").loc["overlap"]
    job = pd.read_csv(folder / "trace_job.csv").iloc[0]
    target = job["step_ms"] - job["compute_ms"]
    assert summary["wrapper_gpu_ms"] > 0.4 and abs(summary["total_added_ms"] / target - 1) < 0.10
    assert "the wrapper's own kernels in them are those of the names and launch shapes" in result.stdout


def test_a_real_replayed_ddp_trace(tmp_path):
    """trace_job.py --graph's traces of DDP at 25 MB on 4096x16x512, two H200s (tests/data/traces/2gpu-graph, from
    results/2xH200/trace-graph): every step replayed, DDP told from NCCL's kernel names (its collectives carry no
    name there), one all-reduce per 64 MiB layer, and no bucket advice."""
    result = analyze(*sorted((DATA / "2gpu-graph").glob("*.trace.json.gz")), "--out", tmp_path / "a")
    assert result.returncode == 0, result.stderr
    summary = ob_csv.load_summary(tmp_path / "a" / "analysis.csv").set_index("mode")
    assert summary.loc["overlap", "system"] == "pytorch-ddp" and summary.loc["overlap", "replayed_share"] == 1
    buckets = pd.read_csv(tmp_path / "a" / "analysis.buckets.csv")
    assert set(buckets.groupby(["rank", "step"]).size()) == {16}
    assert "Its steps were replayed from CUDA graphs" in result.stdout and "bucket_cap_mb=" not in result.stdout


def test_compute_only_steps_in_the_trace_are_the_slowdowns_baseline(tmp_path):
    """trace_job.py profiles the job's compute-only step (no wrapper) before its steps, each inside a host range
    named ob_compute_only: their kernels leave the steps and the trace, and every compute kernel of the job's steps
    (beside a collective or not) is held against the median of the same instance there: its name, launch shape and
    place among the step's instances of them (one GEMM kernel on a larger matrix is the third here); the GPU's idle
    time beyond theirs is added too, and the verdict says so."""
    steps = [(0.0, 100.0), (1000.0, 1100.0), (2000.0, 2100.0), (3000.0, 3100.0)]
    kernels = [(a + b, d, "gemm", "", 0) for a, _ in steps[:2] for b, d in ((0.0, 9), (10.0, 9), (20.0, 15))]
    for start, _ in steps[2:]:  # each GEMM 1 us slower than compute-only, the second beside the all-reduce
        kernels += [(start + 0, 10, "gemm", "", 0), (start + 20, 10, "gemm", "", 0), (start + 40, 16, "gemm", "", 0),
                    (start + 20, 20, "ncclDevKernel_AllReduce", "allreduce", 4 << 20)]
    marks = [{"ph": "X", "cat": "user_annotation", "name": trace_read.COMPUTE_ONLY, "ts": a + 0.5, "dur": 50}
             for a, _ in steps[:2]]
    path = kineto(tmp_path / "t.json", kernels, steps, extra=marks)
    trace = trace_read.read(path)[0]
    shape = "[8, 1, 1]x[128, 1, 1]"
    assert trace.isolated == {("gemm", shape, 0): 9.0, ("gemm", shape, 1): 9.0, ("gemm", shape, 2): 15.0}
    assert len(trace.kernels) == 8 and [n for n, _, _ in trace.steps] == [2, 3]
    stats = trace_stats.step_stats(trace)
    assert [s.step for s in stats] == [2, 3]
    assert math.isclose(stats[0].slowdown_ms, 0.003) and math.isclose(stats[0].slowed_ms, 0.033)
    assert math.isclose(stats[0].exposed_ms, 0.010)
    assert math.isclose(trace.compute_only_idle, 2.0) and math.isclose(stats[0].idle_added_ms, 0.008)
    result = analyze(path, "--out", tmp_path / "a")
    assert result.returncode == 0, result.stderr
    assert "against the job's compute-only steps in the trace" in result.stdout
    assert "idled 0.008 ms more than in the compute-only steps: 0.021 ms in all" in result.stdout
    meta = json.loads((tmp_path / "a" / "analysis.meta.json").read_text())
    assert meta["slowdown_baseline"] == "compute-only steps"
    # Without the marks the same kernels are steps of the job, and the baseline the lone instances
    plain = trace_read.read(kineto(tmp_path / "p.json", kernels, steps))[0]
    assert not plain.isolated and len(trace_stats.steps_of(plain)) == 4
    assert "with no collective in flight" in analyze(tmp_path / "p.json", "--out", tmp_path / "b").stdout


def test_a_cuda_only_trace_takes_its_compute_only_steps_from_a_trace_of_their_own(tmp_path):
    """A CUDA-only profile (trace_job.py --profile gpu) records no host range: no step marker, no ob_compute_only
    range. Its compute-only steps come in a trace of their own (--compute-only, one per rank), every step of it one:
    each compute kernel of the job's steps (found by their kernel sequence) is held against the same instance there,
    a kernel they never ran (a copy of the wrapper's, which no host call tells here) is the wrapper's, and the GPU's
    idle time beyond theirs is added: 10 us exposed + 3 slower + 5 the copy + 23 idle."""
    def unmarked(path):
        trace = json.loads(path.read_text())
        trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("cat") != "user_annotation"]
        path.write_text(json.dumps(trace))
        return path
    steps = [(0.0, 100.0), (1000.0, 1100.0), (2000.0, 2100.0)]
    kernels = [k for a, _ in steps for k in ((a, 10, "forward", "", 0), (a + 20, 10, "backward", "", 0),
                                             (a + 20, 20, "ncclDevKernel_AllReduce", "allreduce", 4 << 20),
                                             (a + 45, 5, "copy", "", 0), (a + 60, 16, "sgd", "", 0))]
    job = unmarked(kineto(tmp_path / "job.json", kernels, steps))
    alone = unmarked(kineto(tmp_path / "alone.json", [(a + b, d, name, "", 0) for a, _ in steps[:2] for b, d, name in
                                                      ((0.0, 9, "forward"), (10.0, 9, "backward"), (20.0, 15, "sgd"))],
                            steps[:2]))
    result = analyze(job, "--compute-only", alone, "--out", tmp_path / "a")
    assert result.returncode == 0, result.stderr
    summary = ob_csv.load_summary(tmp_path / "a" / "analysis.csv").set_index("mode").loc["overlap"]
    assert int(summary["iters"]) == 2 and math.isclose(summary["slowdown_ms"], 0.003)  # the first left out
    assert math.isclose(summary["exposed_comm_ms"], 0.010) and math.isclose(summary["wrapper_gpu_ms"], 0.005)
    assert math.isclose(summary["idle_added_ms"], 0.023) and math.isclose(summary["total_added_ms"], 0.041)
    assert math.isclose(summary["compute_only_step_ms"], 0.035)  # the compute-only steps' span, as a step's
    assert "against the job's compute-only steps in their own trace" in result.stdout
    meta = json.loads((tmp_path / "a" / "analysis.meta.json").read_text())
    assert meta["slowdown_baseline"] == "compute-only trace" and len(meta["traces"]) == 2
    # Without it: the copy counts as compute, and the GEMMs against their lone instances
    plain = analyze(job, "--out", tmp_path / "b")
    summary = ob_csv.load_summary(tmp_path / "b" / "analysis.csv").set_index("mode").loc["overlap"]
    assert summary["wrapper_gpu_ms"] == 0 and "with no collective in flight" in plain.stdout
    other = kineto(tmp_path / "other.json", [(a, 9, "forward", "", 0) for a, _ in steps[:2]], steps[:2], rank=1)
    twin = tmp_path / "alone-again.json"  # a second compute-only trace of the same rank (the same file twice is
    twin.write_text(alone.read_text())  # refused as a repeated argument)
    for extra, told in (([other], "rank 1 has no trace of the job"), ([alone, twin], "compute-only steps already"),
                        ([alone, alone], "given twice")):
        bad = analyze(job, "--compute-only", *extra, "--out", tmp_path / "c")
        assert bad.returncode == 2 and told in bad.stderr and not (tmp_path / "c").exists(), bad.stderr
    # ob-analyze-check finds a job's compute-only traces beside its own (as trace_job.py --profile gpu names them)
    folder = tmp_path / "check"
    folder.mkdir()
    (folder / "j.rank0.trace.json").write_text(job.read_text())
    (folder / "j.compute-only.rank0.trace.json").write_text(alone.read_text())
    pd.DataFrame([{"label": "j", "system": "pytorch-ddp", "ranks": 1, "step_ms": 0.141, "compute_ms": 0.1,
                   "target_lo_ms": 0.04, "target_hi_ms": 0.042}]).to_csv(folder / "trace_job.csv", index=False)
    checked = subprocess.run([*tool("analyze_check.py"), folder, "--csv", tmp_path / "c.csv"], capture_output=True,
                             text=True, timeout=300)
    assert checked.returncode == 0, checked.stderr
    row = pd.read_csv(tmp_path / "c.csv").iloc[0]
    assert math.isclose(row["total_added_ms"], 0.041) and row["verdict"] == "within 10 %"
    # the traced step (76 us) less the compute-only steps as traced (35 us): the whole of it accounted for
    assert math.isclose(row["traced_compute_only_ms"], 0.035) and abs(row["error_traced"]) < 1e-9
