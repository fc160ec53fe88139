"""Shared fixtures: where the built binaries are, and running them. Before any test module is imported, the package
overlap_bench is installed from pyproject.toml with pip (into a folder of the session's own in the build directory)
and imported from there, as a user who ran `pip install .` imports it: a module missing from the package fails the
suite. The tools the tests run as commands run in place from the checkout (`python -m overlap_bench.X`)."""
import importlib.util
import atexit
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def install_package():
    """pip-installs a copy of overlap_bench/ and pyproject.toml (pip's build writes beside its sources) into a target
    folder without the network (--no-index, --no-build-isolation: the system's setuptools builds it) and puts that
    folder first on sys.path. Returns the folder."""
    build = pathlib.Path(os.environ.get("OB_BUILD_DIR", REPO / "build" / "default"))
    # A folder of this session's own (CTest runs several test files at once), removed when the session ends.
    work = pathlib.Path(tempfile.mkdtemp(prefix="ob-python-", dir=build if build.is_dir() else None))
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    source, target = work / "source", work / "site"
    shutil.copytree(REPO / "overlap_bench", source / "overlap_bench",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(REPO / "pyproject.toml", source)
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                                "--no-build-isolation", "--target", str(target), str(source)],
                               capture_output=True, text=True, timeout=300)
    if installed.returncode:
        pytest.exit(f"pip install of overlap_bench (pyproject.toml) failed:\n{installed.stderr.strip()}", returncode=1)
    sys.path.insert(0, str(target))
    return target


PACKAGE_SITE = install_package()
# The commands the tests start (tool()) import the checkout's package, wherever they run.
os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(":"))])
# This process's mpiruns keep Open MPI's session directory apart from every other test's (two mpiruns starting at once
# raced to create the shared one under /tmp); a short path: Open MPI's sockets live in it.
os.environ["OMPI_MCA_orte_tmpdir_base"] = tempfile.mkdtemp(prefix="ob-mpi-")
atexit.register(shutil.rmtree, os.environ["OMPI_MCA_orte_tmpdir_base"], True)


def pytest_report_header():
    return f"overlap_bench: pip-installed into {PACKAGE_SITE}"


@pytest.fixture(scope="session")
def build_dir():
    path = pathlib.Path(os.environ.get("OB_BUILD_DIR", REPO / "build" / "default"))
    if not path.is_dir():
        pytest.skip(f"no build directory at {path}: run scripts/test.sh")
    return path


def built(build_dir, relative, what=None):
    """The path of a file the build makes (`relative` to the build directory); the test skips where it is not."""
    path = build_dir / relative
    if not path.exists():
        pytest.skip(f"{what or path.name} is not built")
    return path


@pytest.fixture(scope="session")
def phase2(build_dir):
    return built(build_dir, "phase2_omp_overlap/phase2_omp_overlap")


@pytest.fixture(scope="session")
def phase3(build_dir):
    """phase3_mpi_cuda's path, for tests that launch it with mpirun."""
    binary = build_dir / "phase3_mpi_cuda" / "phase3_mpi_cuda"
    if not (binary.exists() and shutil.which("mpirun")):
        pytest.skip("phase3_mpi_cuda or mpirun missing")
    return str(binary)


SCRIPTS = REPO / "scripts"  # the shell drivers


def tool(name):
    """The command that runs the package's tool `name` (report or report.py, found in whichever room holds it) in
    place with this Python."""
    stem = name.removesuffix(".py")
    found = sorted((REPO / "overlap_bench").glob(f"*/{stem}.py"))
    assert len(found) == 1, f"no single module {stem} in overlap_bench's rooms: {found}"
    return [sys.executable, "-m", f"overlap_bench.{found[0].parent.name}.{stem}"]


def script(name, *args, cwd=None):
    """The tool `name` run in place (tool()), its output captured."""
    return subprocess.run([*tool(name), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300)


def one_error_line(result, prefix):
    """The one line a usage error prints: exit 2, one stderr line starting with `prefix`; returns it."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(prefix), lines[0]
    return lines[0]


def run_command(command, cwd):
    """`command` in `cwd`, its output captured, no bytecode left behind."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, cwd=cwd, timeout=120, env=env)


def run(binary, *args, cwd=None, timeout=120):
    """Runs a binary; returns the CompletedProcess (text output)."""
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def pytest_terminal_summary(terminalreporter):
    """The count of bad invocations tried per binary and script (test_bad_input.py, test_bad_input_scripts.py), as the
    robustness issue asks."""
    counts = {}
    for outcome in ("passed", "failed", "skipped"):
        for report in terminalreporter.stats.get(outcome, []):
            if "test_bad_invocation" not in report.nodeid or "[" not in report.nodeid:
                continue
            function, case = report.nodeid.split("::")[-1].split("[", 1)
            name = case.split(":", 1)[0] if ":" in case else function.replace("test_bad_invocation_of_", "")
            by_outcome = counts.setdefault(name, {})
            by_outcome[outcome] = by_outcome.get(outcome, 0) + 1
    if counts:
        terminalreporter.write_line("bad invocations tried (each: exit 2, one line naming the option, no file left):")
        for name, by_outcome in sorted(counts.items()):
            terminalreporter.write_line(f"  {name}: " + ", ".join(f"{n} {o}" for o, n in sorted(by_outcome.items())))


@pytest.fixture(scope="session")
def predictor(build_dir):
    """phase4_predict of the build under test."""
    return built(build_dir, "phase4_chunked_nccl/phase4_predict")


@pytest.fixture(scope="session")
def model_binary(build_dir):
    """phase4_model of the build under test."""
    return built(build_dir, "phase4_chunked_nccl/phase4_model")


# The test modules that read traces (overlap_bench.trace.trace_read streams them with ijson, an optional package: the
# main job runs without it, scripts/test.sh says so): skipped, not failed, where it is missing.
NEEDS_IJSON = {"test_analyze", "test_analyze_check", "test_analyze_nsys", "test_analyze_replayed", "test_probe",
               "test_reliability_inputs", "test_trace_job_gpu"}


def pytest_collection_modifyitems(config, items):
    if importlib.util.find_spec("ijson") is not None:
        return
    skip = pytest.mark.skip(reason="ijson (the trace reader's, optional) is not installed")
    for item in items:
        if item.module.__name__ in NEEDS_IJSON:
            item.add_marker(skip)
