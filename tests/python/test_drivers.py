"""The command-line drivers as a user starts them: every script's --help, the shell drivers' headers, bench_gpu.sh's
steps from their experiment specs, run_all.sh --quick end to end, and the argument checks of bench_ddp.py,
with_nccl_env.py and cuda_aware_mpi.sh."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, script, SCRIPTS, tool


def test_every_script_has_help():
    """Each --help runs, and its description is the docstring's first paragraph whole (not cut mid-sentence)."""
    for name in ("plot_gantt.py", "plot_summary.py", "plot_scaling.py", "plot_chunks.py", "plot_power.py", "report.py",
                 "bench_ddp.py", "plot_interference.py"):
        result = script(name, "--help")
        assert result.returncode == 0 and "usage:" in result.stdout, name
        description = " ".join(result.stdout.split("\n\n")[1].split())
        assert description.endswith("."), (name, description)
    # ob_csv.py and ob_tool.py are libraries: asked for help it says what it is instead of printing nothing.
    for library in ("ob_csv.py", "ob_tool.py"):
        result = script(library, "--help")
        assert result.returncode == 0 and "no command line of its own" in result.stdout, library


@pytest.mark.parametrize("name", ["test.sh", "run_all.sh", "bench_gpu.sh", "cuda_aware_mpi.sh"])
def test_shell_script_help_is_its_header_only(name):
    result = subprocess.run([str(SCRIPTS / name), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout and "set -" not in result.stdout and "#" not in result.stdout, result.stdout


def bench_gpu_steps(tmp_path, gpus, *args):
    """bench_gpu.sh's steps as it would run them on `gpus` GPUs: {name: command}, in order."""
    result = subprocess.run(["bash", str(SCRIPTS / "bench_gpu.sh"), "--dry-run", "--out", str(tmp_path), *args],
                            capture_output=True, text=True, timeout=60, env={**os.environ, "GPUS": str(gpus)})
    assert result.returncode == 0, result.stderr
    return dict(line.split(": ", 1) for line in result.stdout.splitlines())


def test_bench_gpu_runs_the_steps_its_table_holds(tmp_path):
    """The steps are experiment specs (experiments/bench/*.toml) the script expands: matrices, configurations,
    conditions, placeholders."""
    steps = bench_gpu_steps(tmp_path, 2)
    placeholders = [c for c in steps.values()
                    if "{" in c.replace("${cap", "").replace("{csv}", "").replace("${OB_GATE_BASE_BUILD-}", "")]
    checks = 5 if shutil.which("ob-analyze-check") else 0  # the trace part's analyses, where the package is installed
    assert len(steps) == 164 + checks and not placeholders, placeholders[:1]
    # the trace part: each job's traces with its compute-only steps, then their analysis where it can run
    assert "--compute-steps 8" in steps["trace-fsdp2"] and f"--out {tmp_path}/trace/graph" in steps["trace-graph"]
    assert "--profile gpu" in steps["trace-fsdp2-gpu"]
    assert ("trace-check-graph" in steps) == bool(checks)
    # the headline in one step (its contenders: experiments/headline.toml), the gate against a given base build
    assert steps["headline"].endswith(f"--out {tmp_path}/headline --gpus 2 --build {REPO / 'build/gpu'}")
    assert "python3 -m overlap_bench.compare.gate --base-build '' --build" in steps["gate"]  # an empty value: one word
    assert [n for n in steps if n.startswith("phase4-sync-")][:3] == [
        "phase4-sync-nccl-4096-16-512", "phase4-sync-nccl-sym-4096-16-512", "phase4-sync-ce-4096-16-512"]
    assert steps["phase4-1024-32-4096"].endswith(
        "-np 2 " + str(REPO / "build/gpu/phase4_chunked_nccl/phase4_chunked_nccl") +
        f" --check --hidden 1024 --layers 32 --batch 4096 --csv {tmp_path}/phase4-1024-32-4096.csv")
    assert "--iters 40" in steps["phase4-power-4096-16-8192"] and "--iters 200" in steps["phase4-power-4096-16-512"]
    assert "planner-check-2gpu" not in steps and "planner-check-2gpu" in bench_gpu_steps(tmp_path, 4)
    assert ("nvtx-ncu" in steps) != ("nvtx-nsys" in steps)
    assert list(bench_gpu_steps(tmp_path, 2, "--part", "phase3")) == ["phase3-gpu", "phase3-gpu-auto", "report"]
    # The transports: nccl-tests only where all_reduce_perf is on the PATH, the prediction from the fits.
    assert "--transport socket --nccl-path --check" in steps["transport-socket-sharded-4096-16-8192"]
    assert ("transport-nccl-tests-shm" in steps) == (shutil.which("all_reduce_perf") is not None)
    assert "--links-from" in steps["transport-prediction"]
    # --config: the loops over the six configurations take the ones named; other steps stay.
    one = bench_gpu_steps(tmp_path, 2, "--part", "planner", "--part", "ddp", "--config", "4096,16,2048")
    assert [n for n in one if n.startswith(("planner-4", "planner-1", "planner-2"))] == ["planner-4096-16-2048"]
    assert "--configs 4096,16,2048 --csv" in one["ddp-expert"]
    bad = subprocess.run(["bash", str(SCRIPTS / "bench_gpu.sh"), "--dry-run", "--config", "4096,16"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--config: '4096,16' is invalid" in bad.stderr, bad.stderr


def test_run_all_quick_end_to_end(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ)
    result = subprocess.run(["bash", str(SCRIPTS / "run_all.sh"), "--quick", "--out", str(out)], capture_output=True,
                            text=True, timeout=900, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "overlap-bench summary" in result.stdout
    # Under ctest (OB_BUILT) it runs the tree under test as it is: no relinking beside the other tests' binaries.
    assert ("building (default preset" in result.stderr) == ("OB_BUILT" not in env), result.stderr[-2000:]
    for name in ("phase2-synthetic", "phase2-real", "phase3"):
        assert (out / f"{name}.csv").exists(), name
    assert (out / "report.md").exists() and list((out / "figures").glob("*.png"))
    # Phases this machine cannot run are listed as skipped, not failed.
    assert "FAILED" not in result.stdout


def test_bench_ddp_rejects_bad_configs(tmp_path):
    pytest.importorskip("torch")
    result = script("bench_ddp.py", "--configs", "4096,16", "--csv", tmp_path / "x.csv")
    assert result.returncode == 2 and "--configs" in result.stderr
    result = script("bench_ddp.py", "--csv", "/nonexistent/x.csv")
    assert result.returncode == 2 and "--csv" in result.stderr


def test_trace_job_checks_its_model_before_any_work(tmp_path):
    """trace_job.py --model: the model parsed by phase4_model before torch is asked for; a bad one, a block count the
    model lacks or a bad size is one line and exit 2, nothing written."""
    for args, words in ((["--model", tmp_path / "none.json"], "--model: '"),
                        (["--model", "gpt2", "--blocks", "99"], "--blocks: '99' is invalid: at most the model's 12"),
                        (["--model", "gpt2", "--seq", "0"], "--seq: '0' is invalid: from 1 to 1048576"),
                        (["--graph", "--fsdp"], "--graph: '--fsdp' is invalid with it")):
        result = script("trace_job.py", *args, "--out", tmp_path / "out")
        assert result.returncode == 2 and words in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists(), result.stderr


def test_with_nccl_env_runs_a_command_under_a_runs_nccl_variables(tmp_path):
    """nccl-tests under the variables --transport set: NCCL_* from the metadata, not the log's own NCCL_DEBUG*."""
    meta = tmp_path / "run.meta.json"
    meta.write_text(json.dumps({"environment": {"NCCL_P2P_DISABLE": "1", "NCCL_DEBUG": "INFO", "HOME": "/elsewhere"}}))
    shown = "import os; print(os.environ.get('NCCL_P2P_DISABLE'), os.environ.get('NCCL_DEBUG'), os.environ['HOME'])"
    result = subprocess.run([*tool("with_nccl_env.py"), str(meta), sys.executable, "-c", shown],
                            capture_output=True, text=True, timeout=60, env={**os.environ, "NCCL_DEBUG": "WARN"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "WARN", os.environ["HOME"]], result.stdout
    assert "NCCL_P2P_DISABLE=1" in result.stderr
    for args, words in (([str(tmp_path / "none.json"), "true"], "none.json' is invalid"),
                        ([str(meta), str(tmp_path / "no-such-tool")], "could not run"), ([str(meta)], "usage:")):
        bad = subprocess.run([*tool("with_nccl_env.py"), *args], capture_output=True, text=True,
                             timeout=60)
        assert bad.returncode == 2 and words in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def test_cuda_aware_mpi_checks_its_arguments_before_any_work(tmp_path):
    """cuda_aware_mpi.sh: a missing or wrongly named tarball, a PREFIX that holds files, a bad --jobs: exit 2 naming
    it, nothing unpacked or built."""
    tarball = tmp_path / "openmpi.tar.xz"
    tarball.write_bytes(b"")
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("")
    for args, words in (([str(tmp_path / "none.tar.xz"), str(tmp_path / "p")], "OPENMPI-SOURCE: '"),
                        ([str(full / "x"), str(tmp_path / "p")], "OPENMPI-SOURCE: '"),
                        ([str(tarball), str(full)], "PREFIX: '"),
                        ([str(tarball), str(tmp_path / "p"), "--jobs", "0"], "--jobs: '0' is invalid"),
                        ([str(tarball)], "usage:")):
        result = subprocess.run(["bash", str(SCRIPTS / "cuda_aware_mpi.sh"), *args], capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 2 and words in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "openmpi.tar.xz"]
