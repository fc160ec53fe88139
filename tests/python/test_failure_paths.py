"""What a failed run leaves (issue 17, class 8): a failed check writes nothing and exits 1, naming the element, the
value got and the value expected; the console still shows the table. Proven end to end with an injected corruption
of what phase 3's exact comm check reads (--inject-fault RANK:STEP:corrupt); a corruption no check reads is a
usage error."""
import os
import shutil
import subprocess

import pytest

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
# With --check, --iters 2, --warmup 0: steps 0-8 are the three strategies' reference checks, 9-10 compute-only,
# 11-12 comm-only, then seq, thread, nonblocking.
SMALL = ["--device", "cpu", "--check", "--iters", "2", "--warmup", "0", "--batch", "64", "--in", "32", "--out", "16",
         "-q"]


@pytest.fixture(scope="module")
def phase3(build_dir):
    binary = build_dir / "phase3_mpi_cuda" / "phase3_mpi_cuda"
    if not (binary.exists() and shutil.which("mpirun")):
        pytest.skip("phase3_mpi_cuda or mpirun missing")
    return str(binary)


def run2(binary, *args):
    command = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "2", binary, *SMALL, *args]
    return subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=120)


@pytest.mark.parametrize("rank", [0, 1])
def test_a_failed_check_writes_nothing_and_exits_1(phase3, tmp_path, rank):
    result = run2(phase3, "--csv", tmp_path / "x.csv", "--inject-fault", f"{rank}:11:corrupt")
    assert result.returncode == 1, result.stderr
    assert "comm: 1 elements of the all-reduced pattern are wrong" in result.stderr
    assert f"rank {rank}: iteration 0, index 256: got" in result.stderr  # the element, got and expected
    assert "# nothing written: a check failed" in result.stdout
    assert "comm" in result.stdout  # the table is still shown
    assert list(tmp_path.iterdir()) == []


def test_the_same_run_without_the_fault_writes_its_files(phase3, tmp_path):
    result = run2(phase3, "--csv", tmp_path / "x.csv")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv", "x.meta.json", "x.timeline.csv",
                                                          "x.timeline.trace.json"]


def test_a_corruption_no_check_reads_is_a_usage_error(phase3, tmp_path):
    command = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "2", phase3,
               *[a for a in SMALL if a != "--check"], "--csv", str(tmp_path / "x.csv"), "--inject-fault", "0:3:corrupt"]
    result = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "--inject-fault: no exact check read a result after step 3" in result.stderr
    assert list(tmp_path.iterdir()) == []
