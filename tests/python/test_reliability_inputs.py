"""Issue 75's rules, each with the hostile input that broke it: any exception a tool did not foresee is one line
and exit 3 with its traceback in a file (never on the terminal); a trace whose fields have the wrong types or
impossible times, a compute-only trace of another job, a pack whose member would land outside its folder: one line,
exit 2, nothing written; paths given from outside never become shell text (bench_gpu.sh, ob-gate's --command)."""
import os
import re
import pathlib
import subprocess
import sys
import shlex
import signal
import tarfile
import time
import io

import pytest

from conftest import REPO, tool
from overlap_bench.core import inputs
from overlap_bench.core import ob_tool
from test_analyze import analyze, kineto, two_steps


def one_line(result, code, text):
    assert result.returncode == code, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert text in result.stderr, result.stderr


def test_an_unforeseen_exception_is_one_line_exit_3_and_a_traceback_file(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["ob-tool"])

    def broken():
        raise RuntimeError("a bug\nwith a second line")

    assert ob_tool.main_guard(broken) == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith("ob-tool: internal error: RuntimeError: a bug (traceback in ") and "\n" not in err
    saved = pathlib.Path(err.rsplit("traceback in ", 1)[1].rstrip(")"))
    try:
        assert "Traceback" in saved.read_text() and "raise RuntimeError" in saved.read_text()
    finally:
        saved.unlink()


@pytest.mark.parametrize("event, text", [
    ({"ph": "X", "cat": "cpu_op", "name": "torch::autograd::AccumulateGrad", "ts": 5, "dur": 1,
      "args": {"Input Dims": [["x" * 100, 10 ** 9]]}}, "are not a shape"),
    ({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1e305, "dur": 1}, "outside what a trace holds"),
    ({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": -5}, "outside what a trace holds"),
    ({"ph": "X", "cat": "kernel", "name": ["not", "a", "name"], "ts": 1, "dur": 1}, "wrong type"),
    ({"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1, "dur": 1, "args": "text"}, "wrong type"),
])
def test_a_trace_with_impossible_fields_is_exit_2_naming_it(tmp_path, event, text):
    path = kineto(tmp_path / "t.json", [(0.0, 10, "gemm", "", 0)], [(0.0, 100.0)], extra=[event])
    one_line(analyze(path, "--out", tmp_path / "a"), 2, text)
    assert not (tmp_path / "a" / "analysis.csv").exists()


def test_a_compute_only_trace_of_another_job_is_refused(tmp_path):
    job = [two_steps(tmp_path / f"r{rank}.json", rank=rank) for rank in (0, 1)]
    other = kineto(tmp_path / "other.json", [(0.0, 10, "softmax", "", 0)], [(0.0, 100.0)], rank=0)
    one_line(analyze(*job, "--compute-only", other, "--out", tmp_path / "a"), 2, "a compute-only trace of another job")
    bigger = kineto(tmp_path / "bigger.json", [(0.0, 10, "gemm", "", 0)], [(0.0, 100.0)], rank=0, world=4)
    one_line(analyze(*job, "--compute-only", bigger, "--out", tmp_path / "b"), 2, "world size 4")


@pytest.mark.parametrize("member", ["../../escaped", "/tmp/absolute-escape", "sub/dir.csv"])
def test_a_pack_never_writes_outside_its_folder(tmp_path, member):
    folder = tmp_path / "results" / "a"
    folder.mkdir(parents=True)
    with tarfile.open(folder / "packed.tar.gz", "w:gz") as archive:
        info = tarfile.TarInfo(member)
        info.size = 2
        archive.addfile(info, io.BytesIO(b"x\n"))
    result = subprocess.run([*tool("packs.py"), "unpack", str(tmp_path / "results")], capture_output=True,
                            text=True, timeout=60)
    one_line(result, 2, "is not a plain file of the pack's folder")
    assert not (tmp_path / "escaped").exists() and not pathlib.Path("/tmp/absolute-escape").exists()
    assert sorted(p.name for p in folder.iterdir()) == ["packed.tar.gz"]


def test_an_output_path_never_becomes_shell_text(tmp_path):
    marker = tmp_path / "PWNED"
    out = f"o$(touch {marker});x"
    result = subprocess.run([str(REPO / "scripts" / "bench_gpu.sh"), "--dry-run", "--part", "phase4", "--out", out],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # each argument one word as a shell reads the line back (issue 83: a folder with a space is not split)
    line = next(x for x in result.stdout.splitlines() if x.startswith("phase4-4096-16-512:"))
    words = shlex.split(line.split(": ", 1)[1])
    assert not marker.exists() and words[words.index("--csv") + 1] == f"{out}/phase4-4096-16-512.csv"


def test_ob_gate_s_command_placeholders_are_checked_before_anything_runs(tmp_path):
    result = subprocess.run([*tool("gate.py"), "--base-build", str(tmp_path), "--build", str(tmp_path), "--command",
                             "{binary} {foo} --csv {csv}", "--out", str(tmp_path / "g")], capture_output=True,
                            text=True, timeout=60)
    one_line(result, 2, "--command")
    assert not (tmp_path / "g").exists()


def test_the_main_job_runs_on_an_offline_node_without_ijson(tmp_path):
    """No network (pip and apt-get fail at once) and no ijson: the main job says what is unavailable and runs."""
    stubs, hidden = tmp_path / "bin", tmp_path / "hidden"
    stubs.mkdir()
    hidden.mkdir()
    (stubs / "apt-get").write_text("#!/bin/sh\necho 'E: offline' >&2\nexit 100\n")
    (stubs / "apt-get").chmod(0o755)
    (hidden / "ijson.py").write_text("raise ImportError('not installed')\n")
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "",
           "PYTHONPATH": str(hidden)}
    result = subprocess.run([str(REPO / "scripts" / "run_all.sh"), "--list"], capture_output=True, text=True,
                            timeout=900, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ijson is not installed and could not be (offline?)" in result.stderr
    assert "phase2" in result.stdout + result.stderr


def test_a_signal_ends_every_run_a_tool_started(tmp_path):
    """A tool that starts a run through compare_runs (ob-headline's calibration, ob-compare, ob-gate) and is ended by
    SIGTERM ends the run's whole session with it: nothing it started is left running."""
    pids = tmp_path / "pids"
    code = ("import sys\nfrom overlap_bench.compare import compare_runs\nfrom overlap_bench.core import ob_tool\n"
            f"def main():\n    compare_runs.run_one('(sleep 300 & echo $! >> {pids}; sleep 300 & echo $! >> {pids}; "
            f"wait)', '{tmp_path}/x.csv', 600, '{tmp_path}/run.log')\n"
            "sys.exit(ob_tool.main_guard(main))\n")
    tool_process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for _ in range(200):
        if pids.is_file() and len(pids.read_text().split()) == 2:
            break
        time.sleep(0.05)
    children = [int(p) for p in pids.read_text().split()]
    tool_process.send_signal(signal.SIGTERM)
    assert tool_process.wait(timeout=60) == 128 + signal.SIGTERM
    for _ in range(200):
        if not any(pathlib.Path(f"/proc/{pid}").exists() and "Z" not in pathlib.Path(f"/proc/{pid}/stat").read_text()
                   .rsplit(")", 1)[1].split()[0] for pid in children):
            break
        time.sleep(0.05)
    left = [pid for pid in children if pathlib.Path(f"/proc/{pid}").exists()
            and pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
    assert left == [], left


def test_ob_analyze_check_never_writes_over_its_own_inputs(tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "trace_job.csv").write_text("label\nx\n")
    before = (folder / "trace_job.csv").read_text()
    result = subprocess.run([*tool("analyze_check.py"), str(folder), "--csv", str(folder / "trace_job.csv")],
                            capture_output=True, text=True, timeout=120)
    one_line(result, 2, "not the file FOLDER reads")
    assert (folder / "trace_job.csv").read_text() == before


def test_an_input_that_inflates_past_its_cap_is_refused(tmp_path):
    """inputs.open_input, through which every trace is opened: what a gzipped file inflates to is bounded too."""
    import gzip

    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as out:
        out.write(b"[" + b"0," * 50000 + b"0]")
    assert bomb.stat().st_size < 2000
    with inputs.open_input(bomb, "TRACE", inflated=10000) as source:
        with pytest.raises(ob_tool.UsageError, match="inflates past"):
            while source.read(4096):
                pass
    with inputs.open_input(bomb, "TRACE") as source:  # under the default cap it reads whole
        assert len(source.read()) == 100003


def test_a_failed_commit_puts_the_older_files_back_and_a_link_is_never_replaced(tmp_path, monkeypatch):
    """staging.Staging (ob-analyze's and ob-compare's output folder): a move that fails mid-commit leaves the folder
    as it was, its older files included; a symbolic link where a file goes is refused before anything moves."""
    from overlap_bench.core import staging

    out = tmp_path / "out"
    out.mkdir()
    (out / "a.csv").write_text("old a\n")
    stage = staging.Staging(out, marker="z.csv", runs=False)
    for name in ("a.csv", "b.csv", "z.csv"):
        (stage.path / name).write_text(f"new {name}\n")
    real = staging.os.replace

    def failing(source, target):
        if pathlib.Path(target).name == "z.csv":
            raise OSError(28, "No space left on device", str(target))
        return real(source, target)

    monkeypatch.setattr(staging.os, "replace", failing)
    with pytest.raises(OSError):
        stage.commit(last="z.csv")
    monkeypatch.setattr(staging.os, "replace", real)
    assert sorted(p.name for p in out.iterdir()) == ["a.csv"] and (out / "a.csv").read_text() == "old a\n"
    target = tmp_path / "elsewhere.csv"
    target.write_text("keep\n")
    (out / "b.csv").symlink_to(target)
    stage = staging.Staging(out, marker="z.csv", runs=False)
    (stage.path / "b.csv").write_text("new\n")
    with pytest.raises(ob_tool.UsageError, match="symbolic link"):
        stage.commit(last="z.csv")
    assert target.read_text() == "keep\n" and (out / "b.csv").is_symlink()


def test_a_toml_nested_too_deep_is_one_line(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ob_tool.UsageError, match="nests too deep|cannot be read"):
        ob_tool.load_toml(path, "--experiment")


def test_no_path_or_value_becomes_shell_text_in_the_tree():
    """The tree holds no `shell=True`, no `eval` in a script, and the GPU benchmark runs every step as an argument
    list: a step's words are split before any value fills them (bench_parts --argv)."""
    found = []
    for path in [*(REPO / "overlap_bench").rglob("*.py"), *(REPO / "scripts").rglob("*.sh"),
                 *(REPO / "scripts").rglob("*.sbatch"), *(REPO / "examples").rglob("*.py")]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0] if path.suffix != ".py" else line
            if "shell=True" in code or (path.suffix != ".py" and re.search(r"(^|[;&|(\s])eval\s", code)):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []


def test_a_step_s_values_are_words_never_shell(tmp_path):
    from overlap_bench.compare import bench_parts

    known = {"out": "o $(touch x);y", "mpi": "mpirun --bind-to none", "gpus": 2, "p4": "/b/p4",
             "configs": "1,2,3 4,5,6"}
    argv = bench_parts.argv_of("{mpi} -np {gpus} {p4} --csv {out}/a.csv --configs {configs}", known)
    assert argv == ["mpirun", "--bind-to", "none", "-np", "2", "/b/p4", "--csv", "o $(touch x);y/a.csv", "--configs",
                    "1,2,3", "4,5,6"]
    script = bench_parts.argv_of("bash -c 'grep x {out}/s.log > {out}/t.txt'", known)
    assert script[:2] == ["bash", "-c"] and "'o $(touch x);y'/s.log" in script[2]
