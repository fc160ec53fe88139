"""NVTX in every phase, as Nsight Systems would show it: an injection library (tests/support/nvtx_recorder.cpp),
loaded by NVTX itself through NVTX_INJECTION64_PATH, records every range pushed and every thread named."""
import os
import shutil
import subprocess

import pytest

from conftest import built

MPI_ENV = dict(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="2")


@pytest.fixture(scope="module")
def recorder(build_dir):
    return built(build_dir, "tests/libob_nvtx_recorder.so", "the NVTX recorder (no NVTX headers in this build)")


def recorded(recorder, tmp_path, command, mpi=False):
    """Runs `command` with the recorder injected; returns (ranges pushed, threads named) over every process."""
    log = tmp_path / "nvtx"
    env = dict(os.environ, NVTX_INJECTION64_PATH=str(recorder), OB_NVTX_LOG=str(log), **MPI_ENV)
    if mpi:
        command = [shutil.which("mpirun"), "-np", "2", "--oversubscribe", "--bind-to", "none",
                   "-x", "NVTX_INJECTION64_PATH", "-x", "OB_NVTX_LOG", *command]
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, cwd=tmp_path, env=env,
                            timeout=600)
    if result.returncode == 77:
        pytest.skip(result.stderr.strip().splitlines()[-1])
    assert result.returncode == 0, result.stderr
    lines = [line for path in tmp_path.glob("nvtx.*") for line in path.read_text().splitlines()]
    assert len(list(tmp_path.glob("nvtx.*"))) == (2 if mpi else 1)  # every process was recorded
    pushed = {line[5:] for line in lines if line.startswith("push ")}
    threads = {line[7:] for line in lines if line.startswith("thread ")}
    return pushed, threads


def test_phase2_ranges_per_chunk_and_named_threads(phase2, recorder, tmp_path):
    pushed, threads = recorded(recorder, tmp_path, [phase2, "--chunks", "3", "--iters", "2", "--warmup", "1",
                                                    "--csv", tmp_path / "p2.csv"])
    for mode in ("seq", "overlap"):
        assert {f"{mode}: compute chunk {k}" for k in range(3)} <= pushed
        assert {f"{mode}: comm chunk {k}" for k in range(3)} <= pushed
    assert {"phase2 thread 0", "phase2 thread 1"} <= threads


def test_phase3_ranges_per_chunk_and_the_comm_and_progress_threads_named(phase3, recorder, tmp_path):
    pushed, threads = recorded(recorder, tmp_path, [phase3, "--device", "cpu", "--batch", "64", "--in", "32",
                                                    "--out", "16", "--chunks", "2", "--iters", "2", "--warmup", "1",
                                                    "--csv", tmp_path / "p3.csv"], mpi=True)
    for mode in ("seq", "thread", "nonblocking", "progress"):
        assert {f"{mode}: forward", f"{mode}: update", f"{mode}: dW chunk 0", f"{mode}: dW chunk 1"} <= pushed
    assert {"seq: allreduce chunk 1", "thread: allreduce chunk 1", "nonblocking: MPI_Iallreduce chunk 1",
            "progress: MPI_Iallreduce chunk 1", "comm: allreduce chunk 0"} <= pushed
    assert {"phase3 comm thread", "phase3 progress"} <= threads


def test_phase1_ranges_per_kernel(build_dir, recorder, tmp_path):
    binary = built(build_dir, "phase1_cuda_baseline/phase1_cuda_baseline")
    pushed, _ = recorded(recorder, tmp_path, [binary, "--iters", "2", "--warmup", "1", "--csv", tmp_path / "p1.csv"])
    assert {"phase1 step", "forward", "loss_grad", "backward", "sgd"} <= pushed


def test_phase4_ranges_per_layer_and_bucket(build_dir, recorder, tmp_path):
    binary = built(build_dir, "phase4_chunked_nccl/phase4_chunked_nccl")
    pushed, _ = recorded(recorder, tmp_path, [binary, "--hidden", "256", "--layers", "4", "--batch", "64",
                                              "--chunks", "2", "--iters", "2", "--warmup", "1",
                                              "--csv", tmp_path / "p4.csv"])  # one rank: one GPU
    assert {"seq", "overlap", "compute", "comm", "update"} <= pushed
    assert {f"forward layer {layer}" for layer in range(1, 5)} <= pushed
    assert {f"backward layer {layer}" for layer in range(1, 5)} <= pushed
    assert {"bucket 0 nccl", "bucket 1 nccl"} <= pushed
