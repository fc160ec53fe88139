"""Shared fixtures: where the built binaries are, and running them."""
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def build_dir():
    path = pathlib.Path(os.environ.get("OB_BUILD_DIR", REPO / "build" / "default"))
    if not path.is_dir():
        pytest.skip(f"no build directory at {path}: run scripts/test.sh")
    return path


@pytest.fixture(scope="session")
def phase2(build_dir):
    binary = build_dir / "phase2_omp_overlap" / "phase2_omp_overlap"
    if not binary.exists():
        pytest.skip("phase2_omp_overlap is not built")
    return binary


def run(binary, *args, cwd=None, timeout=120):
    """Runs a binary; returns the CompletedProcess (text output)."""
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=timeout)
