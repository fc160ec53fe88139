"""Coverage-guided fuzzing of the Python readers (issue 83): atheris (libFuzzer for Python) runs each target of
tests/fuzz/atheris_targets.py (JSON inputs with their schemas, CSV, Kineto trace, TOML experiments) for a bounded time
in a process of its own, all side by side (their bounded times overlap: the module takes one target's time), its
address space bounded (RLIMIT_AS) and its memory watched (-rss_limit_mb), from the seed corpus of
tests/fuzz/corpus/<target>/ copied to a temporary folder (what it finds grows the copy, never the tree).
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


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    """Every target fuzzed at once, each in a folder of its own: {target: (exit, stderr, findings, seeds, corpus)}."""
    try:
        import atheris  # noqa: F401
    except ImportError:
        pytest.skip("atheris is not installed (scripts/lib/common.sh installs it where a wheel exists)")
    running = {}
    try:
        for target in TARGETS:
            folder = tmp_path_factory.mktemp(target)
            corpus = folder / "corpus"
            shutil.copytree(REPO / "tests" / "fuzz" / "corpus" / target, corpus)
            seeds = len(list(corpus.iterdir()))
            command = [sys.executable, str(REPO / "tests" / "fuzz" / "atheris_targets.py"), target, str(corpus),
                       f"-max_total_time={SECONDS}", "-rss_limit_mb=2048", "-timeout=20",
                       f"-artifact_prefix={folder}/"]
            log = (folder / "fuzz.log").open("w+")
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, preexec_fn=limit, cwd=folder,
                                       env={**os.environ, "PYTHONPATH": str(REPO)})
            running[target] = (process, log, folder, seeds, corpus)
        results = {}
        for target, (process, log, folder, seeds, corpus) in running.items():
            try:
                code = process.wait(timeout=SECONDS + 120)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                code = f"killed after {SECONDS + 120} s"
            log.seek(0)
            found = sorted(p.name for p in folder.iterdir()
                           if p.name.startswith(("crash-", "timeout-", "oom-", "leak-")))
            results[target] = (code, log.read(), found, seeds, corpus)
        return results
    finally:
        for process, log, *_ in running.values():
            if process.poll() is None:
                process.kill()
                process.wait()
            log.close()


@pytest.mark.parametrize("target", TARGETS)
def test_a_reader_survives_coverage_guided_fuzzing(fuzzed, target):
    code, stderr, crashes, seeds, corpus = fuzzed[target]
    said = "\n".join(stderr.splitlines()[-30:])
    assert code == 0 and not crashes, f"{target}: exit {code}, {crashes}\n{said}"
    assert "Done" in stderr and len(list(corpus.iterdir())) >= seeds
