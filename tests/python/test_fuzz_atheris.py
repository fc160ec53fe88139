"""Coverage-guided fuzzing of the Python readers (issue 83): atheris (libFuzzer for Python) runs each target of
tests/fuzz/atheris_targets.py (JSON inputs with their schemas, CSV, Kineto trace, TOML experiments) for a bounded time
in a process of its own, its address space bounded (RLIMIT_AS) and its memory watched (-rss_limit_mb), from the seed
corpus of tests/fuzz/corpus/<target>/ copied to a temporary folder (what it finds grows the copy, never the tree).
A crash (an exception other than the suite's one-line refusals), a leak past the limit or a hang fails the test with
the input that caused it. OB_FUZZ_SECONDS sets the time of each target (default 10: the fuzz tests together stay
within five minutes on two loaded cores)."""
import os
import resource
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

SECONDS = int(os.environ.get("OB_FUZZ_SECONDS", "10"))
MEMORY = 8 << 30  # bytes of address space: pandas and numpy map far more than they use
TARGETS = ["json", "csv", "trace", "toml"]


def limit():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


@pytest.mark.parametrize("target", TARGETS)
def test_a_reader_survives_coverage_guided_fuzzing(tmp_path, target):
    try:
        import atheris  # noqa: F401
    except ImportError:
        pytest.skip("atheris is not installed (scripts/lib/common.sh installs it where a wheel exists)")
    corpus = tmp_path / "corpus"
    shutil.copytree(REPO / "tests" / "fuzz" / "corpus" / target, corpus)
    seeds = len(list(corpus.iterdir()))
    command = [sys.executable, str(REPO / "tests" / "fuzz" / "atheris_targets.py"), target, str(corpus),
               f"-max_total_time={SECONDS}", "-rss_limit_mb=2048", "-timeout=20", f"-artifact_prefix={tmp_path}/"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=SECONDS + 120, preexec_fn=limit,
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)})
    crashes = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("crash-", "timeout-", "oom-", "leak-")))
    said = "\n".join(result.stderr.splitlines()[-30:])
    assert result.returncode == 0 and not crashes, f"{target}: exit {result.returncode}, {crashes}\n{said}"
    assert "Done" in result.stderr and len(list(corpus.iterdir())) >= seeds
