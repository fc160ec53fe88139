"""phase2_omp_overlap as a user runs it: outputs, exit codes, bad invocations."""
import json
import os
import subprocess
import time

import pandas as pd
import pytest

from conftest import run


def test_default_run_writes_summary_timeline_trace_and_metadata(phase2, tmp_path):
    csv = tmp_path / "p2.csv"
    result = run(phase2, "--iters", "3", "--warmup", "1", "--chunks", "4", "--compute-ms", "2", "--comm-ms", "1",
                 "--csv", csv)
    assert result.returncode == 0, result.stderr
    summary = pd.read_csv(csv)
    assert list(summary["mode"]) == ["compute", "comm", "seq", "overlap", "ideal", "bound"]
    assert (summary["system"] == "overlap-bench").all() and (summary["phase"] == "phase2").all()
    bound = summary.set_index("mode").loc["bound", "time_ms_p50"]
    assert bound == pytest.approx(2 + 3 * 2 + 1)
    trace = json.loads((tmp_path / "p2.timeline.trace.json").read_text())
    assert sum(e["ph"] == "X" for e in trace["traceEvents"]) == 3 * (8 + 8 + 4 + 4)
    meta = json.loads((tmp_path / "p2.meta.json").read_text())
    assert meta["phase"] == "phase2" and meta["clock"] == "std::chrono::steady_clock"
    assert meta["command_line"][-1] == str(csv)
    assert "time_p50" in result.stdout and "bound" in result.stdout
    assert not list(tmp_path.glob("*.tmp.*"))


def test_help_exits_0(phase2):
    result = run(phase2, "--help")
    assert result.returncode == 0
    assert "--compute-ms" in result.stdout and "--workload" in result.stdout


QUICK_RUN = ["--iters", "2", "--warmup", "0", "--chunks", "3", "--compute-ms", "1", "--comm-ms", "1", "-q"]


@pytest.mark.parametrize("env, named", [
    ({"OMP_THREAD_LIMIT": "1"}, "OMP_THREAD_LIMIT: '1' is invalid: the overlapped mode needs 2 OpenMP threads"),
    ({"OMP_NUM_THREADS": "100000"}, "OMP_NUM_THREADS: '100000' is invalid: at most 4 x this machine's"),
])
def test_openmp_thread_settings_that_cannot_work_are_refused(phase2, tmp_path, env, named):
    """One thread would run the two overlapped sections one after the other and wait for ever; a hundred thousand
    threads exhausted the machine (segfault). Both are refused before any work, nothing written."""
    for workload in ("synthetic", "real"):
        result = subprocess.run([str(phase2), *QUICK_RUN, "--workload", workload, "--csv", str(tmp_path / "x.csv")],
                                capture_output=True, text=True, timeout=60, env=dict(os.environ, **env))
        assert result.returncode == 2, result.stderr
        assert named in result.stderr
        assert list(tmp_path.iterdir()) == []


def test_one_thread_is_enough_without_the_overlapped_mode(phase2, tmp_path):
    result = subprocess.run([str(phase2), *QUICK_RUN, "--mode", "seq", "--csv", str(tmp_path / "x.csv")],
                            capture_output=True, text=True, timeout=60, env=dict(os.environ, OMP_THREAD_LIMIT="1"))
    assert result.returncode == 0, result.stderr


def test_phase2_has_the_watchdog(phase2, tmp_path):
    start = time.monotonic()
    result = subprocess.run([str(phase2), *QUICK_RUN, "--inject-fault", "0:2:hang", "--timeout-s", "2",
                             "--csv", str(tmp_path / "x.csv")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 3
    assert "no progress for 2 s (--timeout-s 2) in comm iteration 0 (step 2)" in result.stderr
    assert time.monotonic() - start < 20
    assert list(tmp_path.iterdir()) == []


def test_metadata_records_the_threads_used(phase2, tmp_path):
    result = subprocess.run([str(phase2), *QUICK_RUN, "--threads", "3", "--csv", str(tmp_path / "x.csv")],
                            capture_output=True, text=True, timeout=60, env=dict(os.environ, OMP_NUM_THREADS="7"))
    assert result.returncode == 0, result.stderr
    meta = json.loads((tmp_path / "x.meta.json").read_text())
    assert meta["omp_threads"] == 3 and meta["compute_threads"] == 2
