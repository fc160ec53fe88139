"""phase3_mpi_cuda under mpirun as a user runs it: outputs on rank 0, exit codes agreed by every rank."""
import json
import os
import shutil
import subprocess

import pandas as pd
import pytest

MPIRUN = shutil.which("mpirun")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="2")


def mpirun(binary, ranks, *args, cwd=None):
    command = [MPIRUN, "-np", str(ranks), "--oversubscribe", "--bind-to", "none", str(binary), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=ENV, timeout=300)


def test_two_ranks_write_one_merged_set_of_files(phase3, tmp_path):
    csv = tmp_path / "p3.csv"
    result = mpirun(phase3, 2, "--device", "cpu", "--check", "--batch", "101", "--in", "24", "--out", "16",
                    "--chunks", "4", "--iters", "3", "--warmup", "1", "--csv", csv)
    assert result.returncode == 0, result.stderr
    summary = pd.read_csv(csv)
    assert list(summary["mode"]) == ["compute", "comm", "seq", "thread", "nonblocking", "ideal", "bound"]
    assert (summary["ranks"] == 2).all()
    assert summary.set_index("mode").loc["comm", "wrong"] == 0
    rows = summary.set_index("mode")["time_ms_p50"]
    assert rows["ideal"] == pytest.approx(max(rows["compute"], rows["comm"]))
    timeline = pd.read_csv(tmp_path / "p3.timeline.csv")
    assert sorted(timeline["rank"].unique()) == [0, 1]
    assert {"seq:compute", "seq:comm", "thread:comm", "nonblocking:comm"} <= set(timeline["lane"])
    meta = json.loads((tmp_path / "p3.meta.json").read_text())
    assert meta["ranks"] == 2 and "mpi_library" in meta
    assert result.stdout.count("# phase3_mpi_cuda") == 1  # only rank 0 prints the table


BAD = [["--chunks", "0"], ["--strategy", "fast"], ["--batch", "-1"], ["--device", "cpu", "--cuda-aware"],
       ["--csv", "/nonexistent/x.csv"], ["--lr", "nan"]]


@pytest.mark.parametrize("args", BAD, ids=[" ".join(a) for a in BAD])
def test_bad_options_exit_2_on_every_rank_with_one_line(phase3, tmp_path, args):
    result = mpirun(phase3, 2, *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("phase3_mpi_cuda: error: ")]
    assert len(errors) == 1, result.stderr
    assert args[0] in errors[0]
    assert list(tmp_path.iterdir()) == []
