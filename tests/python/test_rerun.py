"""A result repeated from its metadata alone (overlap_bench/core/rerun.py): the printed command, run by a shell,
writes a new summary with the same modes and configuration; under mpirun the launcher's command line is the one
replayed. Every summary ends with its provenance columns; the metadata names the launcher and every rank's argv."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import tool
from overlap_bench.core import ob_csv

MPIRUN = shutil.which("mpirun")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")


def rerun(summary, *extra):
    return subprocess.run([*tool("rerun.py"), str(summary), *map(str, extra)],
                          capture_output=True, text=True, timeout=60)


def same_run(first, second):
    a, b = ob_csv.load_summary(first), ob_csv.load_summary(second)
    assert list(a["mode"]) == list(b["mode"])
    columns = a.attrs["config_columns"]
    assert columns == b.attrs["config_columns"]
    assert a[columns].astype(str).equals(b[columns].astype(str))


def test_phase2_runs_again_from_its_metadata(phase2, tmp_path):
    csv = tmp_path / "p2.csv"
    first = subprocess.run([str(phase2), "--iters", "2", "--warmup", "0", "--chunks", "3", "--compute-ms", "1",
                            "--comm-ms", "1", "--csv", csv], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    summary = ob_csv.load_summary(csv)
    meta = json.loads((tmp_path / "p2.meta.json").read_text())
    assert meta["launcher"]["name"] == "none" and meta["working_directory"] == str(tmp_path)
    assert (summary["hardware"] == meta["cpu_model"]).all() and (summary["host_count"] == 1).all()
    assert (summary["commit"] == meta["commit"]).all()
    printed = rerun(csv)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith(f"cd {tmp_path} && ") and "p2.rerun.csv" in printed.stdout
    again = subprocess.run(["bash", "-c", printed.stdout], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    same_run(csv, tmp_path / "p2.rerun.csv")


@pytest.mark.skipif(MPIRUN is None, reason="mpirun missing")
def test_phase3_under_mpirun_replays_the_launcher(phase3, tmp_path):
    csv = tmp_path / "p3.csv"
    first = subprocess.run([MPIRUN, "-np", "2", "--oversubscribe", "--bind-to", "none", phase3, "--device", "cpu",
                            "--iters", "2", "--batch", "32", "--in", "8", "--out", "8", "--csv", csv],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path, env=ENV)
    assert first.returncode == 0, first.stderr
    meta = json.loads((tmp_path / "p3.meta.json").read_text())
    assert meta["launcher"]["name"] == "mpirun" and meta["launcher"]["command_line"][:3] == [MPIRUN, "-np", "2"]
    assert [line[0] for line in meta["rank_command_lines"]] == [phase3, phase3]
    new = tmp_path / "again.csv"
    printed = rerun(csv, "--csv", new)
    assert printed.returncode == 0, printed.stderr
    assert f"{MPIRUN} -np 2" in printed.stdout and "OMPI_COMM_WORLD" not in printed.stdout
    again = subprocess.run(["bash", "-c", printed.stdout], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    same_run(csv, new)


def test_rerun_refuses_what_it_cannot_use(tmp_path):
    csv = tmp_path / "x.csv"
    csv.write_text("system,phase,mode\n")
    result = rerun(csv)
    assert result.returncode == 2 and "no metadata beside it" in result.stderr, result.stderr
    (tmp_path / "x.meta.json").write_text("{ nope")
    result = rerun(csv)
    assert result.returncode == 2 and "not JSON" in result.stderr, result.stderr
    (tmp_path / "x.meta.json").write_text('{"suite": "other"}')
    result = rerun(csv)
    assert result.returncode == 2 and "not the metadata of an overlap-bench run" in result.stderr, result.stderr


@pytest.mark.parametrize("meta, named", [
    ([1, 2], "the top level: must be object"),
    ({"suite": "overlap-bench", "command_line": "phase2 --iters 3"}, "field 'command_line': must be array"),
    ({"suite": "overlap-bench", "command_line": []}, "command_line must be a non-empty list"),
    ({"suite": "overlap-bench", "command_line": ["a"], "environment": ["X=1"]}, "field 'environment': must be object"),
    ({"suite": "overlap-bench", "command_line": ["a"], "launcher": "mpirun"}, "field 'launcher': must be object"),
    ({"suite": "overlap-bench", "command_line": ["a"], "working_directory": 7},
     "field 'working_directory': must be string"),
    ({"suite": "overlap-bench", "command_line": ["a"], "working_directory": "/tmp/caf\ufffd"}, "was not UTF-8"),
    ({"suite": "overlap-bench", "launcher": {"name": "srun", "command_line": [None]}, "command_line": ["a"]},
     "launcher.command_line must be a non-empty list"),
])
def test_wrong_typed_metadata_is_one_line_not_a_traceback(tmp_path, meta, named):
    csv = tmp_path / "x.csv"
    csv.write_text("system,phase,mode\n")
    (tmp_path / "x.meta.json").write_text(json.dumps(meta))
    result = rerun(csv)
    assert result.returncode == 2 and named in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
