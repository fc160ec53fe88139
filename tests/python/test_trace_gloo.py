"""Gloo's host collectives in a PyTorch profiler trace (issue 82): its own ranges (gloo:all_reduce) or, in a trace
of backend gloo, c10d's records of them, read as communication on the host (kernels on HOST_STREAM), not as the
wrapper's host calls; and no sentence of ob-analyze says nan where a figure was not measured."""
import json
import subprocess

from conftest import tool
from overlap_bench.trace import trace_model, trace_read, trace_stats


def trace(path, gloo_ops=True, comm=True, backend="gloo"):
    """Three steps of 1000 us: two compute kernels each (launched 1 us after the step's start), and where `comm`
    a 300 us all-reduce on the host after the compute (gloo:all_reduce on its own thread, inside c10d::allreduce_)."""
    events = []
    for n in range(3):
        base = n * 1000.0
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "ts": base, "dur": 1000,
                       "tid": 1})
        for i, (start, dur) in enumerate(((10, 200), (220, 200))):
            correlation = n * 10 + i
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": base + 1 + i,
                           "dur": 1, "tid": 1, "args": {"correlation": correlation}})
            events.append({"ph": "X", "cat": "kernel", "name": "gemm", "ts": base + start, "dur": dur, "tid": 7,
                           "args": {"correlation": correlation, "stream": 7, "grid": [8, 1, 1],
                                    "block": [128, 1, 1]}})
        if comm:
            events.append({"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "ts": base + 430, "dur": 5,
                           "tid": 1, "args": {}})
            if gloo_ops:
                events.append({"ph": "X", "cat": "cpu_op", "name": "gloo:all_reduce", "ts": base + 440, "dur": 300,
                               "tid": 9, "args": {"In msg nelems": 1000, "dtype": "Float"}})
            else:
                events.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "ts": base + 440,
                               "dur": 300, "tid": 1, "args": {"Collective name": "allreduce",
                                                              "In msg nelems": 1000, "dtype": "Float"}})
    path.write_text(json.dumps({"distributedInfo": {"backend": backend, "rank": 0, "world_size": 2},
                                "traceEvents": events}))
    return path


def test_gloo_ranges_are_communication_on_the_host(tmp_path):
    one, = trace_read.read(trace(tmp_path / "gloo.trace.json"))
    host = [k for k in one.kernels if k.stream == trace_model.HOST_STREAM]
    assert len(host) == 3 and all(k.comm and k.collective == "all_reduce" and k.nbytes == 4000 for k in host)
    stats = trace_stats.step_stats(one)
    assert [round(s.comm_ms, 3) for s in stats] == [0.3] * 3
    assert [round(s.exposed_ms, 3) for s in stats] == [0.3] * 3  # after the compute: none of it hidden


def test_c10d_records_in_a_gloo_trace_and_not_the_wrapper(tmp_path):
    one, = trace_read.read(trace(tmp_path / "records.trace.json", gloo_ops=False))
    host = [k for k in one.kernels if k.stream == trace_model.HOST_STREAM]
    assert [k.collective for k in host] == ["allreduce"] * 3
    assert all((k.start, k.end) not in one.wrapper for k in host)
    nccl, = trace_read.read(trace(tmp_path / "nccl.trace.json", gloo_ops=False, backend="nccl"))
    assert not [k for k in nccl.kernels if k.stream == trace_model.HOST_STREAM]  # NCCL's records stay the wrapper's


def test_no_nan_in_any_sentence(tmp_path):
    for name, comm in (("gloo", True), ("nothing", False)):
        done = subprocess.run([*tool("analyze.py"), str(trace(tmp_path / f"{name}.trace.json", comm=comm)), "--out",
                               str(tmp_path / name)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "nan" not in done.stdout.lower().replace("nanosec", ""), done.stdout
        if not comm:
            assert "communication none measured" in done.stdout
