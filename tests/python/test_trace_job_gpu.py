"""trace_job.py on one GPU (issue 52): its trace holds the job's compute-only steps, each inside a host range
ob_compute_only, half before the job's steps and half after, and ob-analyze sets them apart as the slowdown's
baseline, eager and replayed from CUDA graphs alike; a CUDA-only profile writes them in a trace of their own. Needs
torch and a GPU (skipped without them, as on CI's CPU machine)."""
import subprocess
import sys

import pandas as pd
import pytest

from conftest import REPO
from overlap_bench.trace import trace_read, trace_stats

pytest.importorskip("ijson")  # the trace reader's (pyproject.toml): on the GPU image from .whl/
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1"]


@pytest.mark.parametrize("graph", [False, True])
def test_the_trace_holds_compute_only_steps_around_the_jobs(tmp_path, graph):
    result = subprocess.run([*TORCHRUN, "-m", "overlap_bench.trace.trace_job", "--configs", "512,4,64",
                             "--bucket-mb", "1",
                             "--steps", "3", "--compute-steps", "2", "--iters", "4", "--passes", "2", "--out",
                             str(tmp_path), *(["--graph"] if graph else [])],
                            capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    job = pd.read_csv(tmp_path / "trace_job.csv").iloc[0]
    assert job["compute_steps"] == 2 and job["graph"] == int(graph)
    trace = trace_read.read(next(tmp_path.glob("*.rank0.trace.json.gz")))[0]
    assert len(trace.compute_only) == 2 and trace.isolated
    steps = trace_stats.steps_of(trace)
    assert len(steps) == 3 and all(trace_stats.replayed(trace, ks) == graph for _, ks in steps)
    first, last = min(a for a, _ in trace.compute_only), max(a for a, _ in trace.compute_only)
    hosts = [trace.launches[k.correlation] for _, ks in steps for k in ks if k.correlation in trace.launches]
    assert first < min(hosts) and max(hosts) < last  # one before the job's steps, one after


def test_a_cuda_only_profile_writes_its_compute_only_steps_apart(tmp_path):
    """--profile gpu records no host range: the compute-only steps go to a trace of their own beside the job's, and
    ob-analyze-check gives it to ob-analyze (--compute-only): the slowdown held against its steps, instance by
    instance, and the analysis says so."""
    result = subprocess.run([*TORCHRUN, "-m", "overlap_bench.trace.trace_job", "--configs", "512,4,64",
                             "--bucket-mb", "1",
                             "--steps", "3", "--compute-steps", "3", "--iters", "4", "--passes", "2", "--profile",
                             "gpu", "--out", str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert pd.read_csv(tmp_path / "trace_job.csv").iloc[0]["compute_steps"] == 3
    (alone,) = tmp_path.glob("*.compute-only.rank0.trace.json.gz")
    trace = trace_read.read(alone)[0]
    assert not trace.steps and not any(k.comm for k in trace.kernels)
    assert len(trace_stats.steps_of(trace)) == 3  # by the kernel sequence: no step marker in a CUDA-only trace
    checked = subprocess.run([sys.executable, "-m", "overlap_bench.trace.analyze_check", str(tmp_path), "--csv",
                              str(tmp_path / "c.csv")], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert checked.returncode == 0, checked.stderr[-2000:]
    row = pd.read_csv(tmp_path / "c.csv").iloc[0]
    assert row["total_added_ms"] > 0 and row["slowdown_ms"] < row["traced_step_ms"]
    (job,) = tmp_path.glob("*mb.rank0.trace.json.gz")
    said = subprocess.run([sys.executable, "-m", "overlap_bench.trace.analyze", str(job), "--compute-only", str(alone),
                           "--out", str(tmp_path / "a")], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert said.returncode == 0 and "compute-only steps in their own trace" in said.stdout, said.stderr[-2000:]
