"""Every rank on the same configuration (issue 17, classes 2 and 3): ranks launched with different options (MPMD)
stop within seconds with exit 2, the message naming the option and both values; a usage error on one rank alone
ends the whole job the same way, printed by that rank; nothing is written."""
import os
import subprocess
import time

import pytest

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")



def mpmd(binary, rank0, rank1, csv):
    common = ["--device", "cpu", "--iters", "2", "--warmup", "0", "-q", "--csv", str(csv), "--timeout-s", "60"]
    command = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "1", binary, *common, *rank0, ":",
               "-np", "1", binary, *common, *rank1]
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=120)
    return result, time.monotonic() - start


@pytest.mark.parametrize("rank0, rank1, named", [
    (["--chunks", "4"], ["--chunks", "8"], "--chunks: rank 0 has 4, rank 1 has 8"),
    (["--lr", "0.01"], ["--lr", "0.02"], "--lr: rank 0 has 0.01, rank 1 has 0.02"),
    ([], ["--batch", "512"], "--batch: rank 0 has 1024, rank 1 has 512"),
    ([], ["--check"], "--check"),
])
def test_ranks_on_different_options_stop_at_once(phase3, tmp_path, rank0, rank1, named):
    csv = tmp_path / "out.csv"
    result, seconds = mpmd(phase3, rank0, rank1, csv)
    assert result.returncode == 2, result.stderr
    assert named in result.stderr
    assert "the ranks disagree on" in result.stderr
    assert seconds < 30
    assert list(tmp_path.iterdir()) == []


def test_a_usage_error_on_one_rank_ends_the_job_naming_the_option(phase3, tmp_path):
    result, seconds = mpmd(phase3, [], ["--chunks", "0"], tmp_path / "out.csv")
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(lines) == 1 and "--chunks" in lines[0] and "(rank 1)" in lines[0], result.stderr
    assert seconds < 30
    assert list(tmp_path.iterdir()) == []


def test_a_fault_at_a_step_that_never_comes_is_a_usage_error(phase3, tmp_path):
    csv = tmp_path / "out.csv"
    command = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "2", phase3, "--device", "cpu", "--iters", "2",
               "--warmup", "0", "--batch", "64", "--in", "32", "--out", "16", "-q", "--csv", str(csv),
               "--inject-fault", "1:100000:exit"]
    result = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "--inject-fault: step 100000 never came: the run's steps were 0 to" in result.stderr
    assert list(tmp_path.iterdir()) == []
