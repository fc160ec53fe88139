"""phase2_omp_overlap as a user runs it: outputs, exit codes, bad invocations."""
import json

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
