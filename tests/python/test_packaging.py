"""The scripts installed as a user would (pyproject.toml): `pip install` into a fresh virtual environment gives
importable modules and console commands that do their work, from the environment, not from the checkout."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import overlap_bench
from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool
from overlap_bench.report import plot_gantt
from conftest import REPO, PACKAGE_SITE

# Every console command pyproject.toml installs.
COMMANDS = re.findall(r"^(ob-[a-z-]+) = ", (REPO / "pyproject.toml").read_text(), re.M)


def run(command, cwd, env):
    return subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_pip_install_gives_modules_and_commands(tmp_path):
    source = tmp_path / "source"  # a copy: pip's build leaves its egg-info beside the sources
    shutil.copytree(REPO / "overlap_bench", source / "overlap_bench",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(REPO / "pyproject.toml", source)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    venv = tmp_path / "venv"
    assert run([sys.executable, "-m", "venv", "--system-site-packages", venv], tmp_path, env).returncode == 0
    bin_dir = venv / "bin"
    installed = run([bin_dir / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                     "--no-build-isolation", source], tmp_path, env)
    assert installed.returncode == 0, installed.stderr

    imported = run([bin_dir / "python", "-c", "from overlap_bench.core import ob_csv, ob_metrics; "
                    "from overlap_bench.report import report, plot_gantt; from overlap_bench.ddp import "
                    "bench_ddp; print(plot_gantt.__file__)"], tmp_path, env)
    assert imported.returncode == 0, imported.stderr
    assert str(venv) in imported.stdout, "the module came from outside the environment"
    # One package and nothing else at the top level: no module of the suite in the global namespace.
    listed = run([bin_dir / "python", "-c", "import importlib.metadata as m; print(sorted({f.parts[0] for f in "
                  "m.distribution('overlap-bench').files if f.suffix == '.py'}))"], tmp_path, env)
    assert listed.returncode == 0 and listed.stdout.strip() == "['overlap_bench']", (listed.stdout, listed.stderr)
    for command in COMMANDS:
        helped = run([bin_dir / command, "--help"], tmp_path, env)
        assert helped.returncode == 0, (command, helped.stderr)
        assert "usage: " in helped.stdout.lower(), (command, helped.stdout[:80])

    # An installed command does its work: a Gantt chart of a two-event timeline; a bad input still exits 2.
    timeline = tmp_path / "t.timeline.csv"
    timeline.write_text("rank,lane,name,iter,chunk,start_us,end_us\n0,overlap:compute,backward,0,1,0,10\n"
                        "0,overlap:comm,allreduce,0,0,5,20\n")
    drawn = run([bin_dir / "ob-plot-gantt", timeline, "-o", tmp_path / "gantt.png"], tmp_path, env)
    assert drawn.returncode == 0, drawn.stderr
    assert (tmp_path / "gantt.png").stat().st_size > 1000
    refused = run([bin_dir / "ob-report", tmp_path / "missing"], tmp_path, env)
    assert refused.returncode == 2 and refused.stderr.startswith("ob-report: error: "), refused.stderr
    # Self-contained: ob-analyze-bench's trace is the package's own data, not a checkout's file (issue 73); the
    # headline's experiment has no default outside a checkout and says so.
    benched = run([bin_dir / "ob-analyze-bench", "--gb", "0.002", "--csv", tmp_path / "bench.csv"], tmp_path, env)
    assert benched.returncode == 0 and (tmp_path / "bench.csv").is_file(), benched.stderr
    lost = run([bin_dir / "ob-headline", "--dry-run", "--out", tmp_path / "h"], tmp_path, env)
    assert lost.returncode == 2 and "--experiment: required outside a checkout" in lost.stderr, lost.stderr


def test_the_suite_imports_the_installed_modules():
    """conftest.py pip-installs overlap_bench before any test module imports it: the modules the tests use are the
    installed package's, not the checkout's files."""
    for module in (overlap_bench, ob_csv, plot_gantt):
        assert PACKAGE_SITE / "overlap_bench" in pathlib.Path(module.__file__).parents or \
            pathlib.Path(module.__file__).parent == PACKAGE_SITE / "overlap_bench", module.__file__


def test_a_checkout_s_binary_is_the_default_build_s_not_the_sanitized_one(tmp_path, monkeypatch):
    """find_built (predict.py, headline.py, advice.py): from a checkout's build folders, the default preset's binary,
    then another unsanitized one, the ASan build's only where it is the only one (it sorts first by name, runs slower
    and cannot start under a limit on address space)."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # nothing installed

    def make(preset):
        path = tmp_path / "build" / preset / "phase4_chunked_nccl" / "phase4_predict"
        path.parent.mkdir(parents=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
        return str(path)

    asan = make("asan")
    assert ob_tool.find_built("phase4_predict", root=tmp_path) == asan
    gpu = make("gpu")
    assert ob_tool.find_built("phase4_predict", root=tmp_path) == gpu
    default = make("default")
    assert ob_tool.find_built("phase4_predict", root=tmp_path) == default
    assert ob_tool.find_built("phase4_predict", "/given/path", root=tmp_path) == "/given/path"


def test_a_checkout_hands_its_package_to_the_processes_it_starts_an_installation_does_not(tmp_path, monkeypatch):
    """main_guard's export_package_path: from a checkout (its pyproject.toml beside the package) the checkout's root
    goes first on PYTHONPATH, once; from an installation nothing is added (a contender of another environment must not
    be handed this one's site-packages)."""
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setattr(ob_tool, "REPO", PACKAGE_SITE)  # an installation: no pyproject.toml there
    ob_tool.export_package_path()
    assert os.environ["PYTHONPATH"] == "/elsewhere"
    monkeypatch.setattr(ob_tool, "REPO", REPO)
    ob_tool.export_package_path()
    ob_tool.export_package_path()
    assert os.environ["PYTHONPATH"] == f"{REPO}{os.pathsep}/elsewhere"
