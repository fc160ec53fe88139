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
    assert list(summary["mode"]) == ["seq", "overlap", "compute", "comm", "ideal", "bound"]
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


BAD = [
    ["--chunks", "0"], ["--chunks", "-3"], ["--chunks", "many"], ["--compute-ms", "nan"], ["--comm-ms", "-1"],
    ["--jitter", "2"], ["--threads", "-1"], ["--mode", "fast"], ["--workload", "gpu"], ["--hidden", "0"],
    ["--chunk-rows", "1.5"], ["--virtual-ranks", "0"], ["--iters", "0"], ["--warmup", "-1"], ["--no-such-option"],
    ["--csv", "/nonexistent/dir/x.csv"], ["--timeline", "/nonexistent/dir/t.csv"],
    ["--workload", "real", "--chunk-rows", "16M", "--hidden", "65536"],
]


@pytest.mark.parametrize("args", BAD, ids=[" ".join(a) for a in BAD])
def test_bad_invocation_exits_2_with_one_line_and_writes_nothing(phase2, tmp_path, args):
    result = run(phase2, *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("phase2_omp_overlap: error: ")
    option = args[0] if args[0] != "--workload" or len(args) == 2 else "--chunk-rows"
    assert option in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_help_exits_0(phase2):
    result = run(phase2, "--help")
    assert result.returncode == 0
    assert "--compute-ms" in result.stdout and "--workload" in result.stdout
