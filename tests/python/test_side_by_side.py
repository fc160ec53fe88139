"""ob-side-by-side (issue 72): the probe, ob-analyze on a plain trace, HTA and TraceLens on the same job, each held
against the truth; on a synthetic job whose parts are known (test_probe's), HTA's and TraceLens' columns whatever
they say where installed (empty where not), and bad inputs one line, exit 2, nothing written."""
import json
import math
import shutil

import pandas as pd
import pytest

from conftest import one_error_line, run_command, tool
from test_probe import probe_folder

from overlap_bench.trace import side_by_side


def job(tmp_path, truth_added=0.040):
    folder = probe_folder(tmp_path / "job")
    (folder / "truth.json").write_text(json.dumps({
        "truth_step_ms": 0.08, "truth_compute_ms": 0.04, "truth_added_ms": truth_added, "truth_ci_lo_ms": 0.035,
        "truth_ci_hi_ms": 0.045, "probe_added_ms": 0.020, "error": 0.020 / truth_added - 1, "within_5pct": False,
        "steps": 12}))
    plain = tmp_path / "job-plain"
    plain.mkdir()
    for rank in (0, 1):
        shutil.copy(folder / f"job.rank{rank}.trace.json", plain / f"host_{rank}.1.pt.trace.json")
    return folder


def test_each_tool_held_against_the_truth(tmp_path):
    folder = job(tmp_path)
    result = run_command([*tool("side_by_side"), folder, "--csv", tmp_path / "t.csv"], tmp_path)
    assert result.returncode == 0, result.stderr
    row = pd.read_csv(tmp_path / "t.csv").iloc[0]
    assert row["job"] == "job" and math.isclose(row["truth_added_ms"], 0.040)
    assert math.isclose(row["probe_added_ms"], 0.020) and math.isclose(row["probe_error"], -0.5)
    # ob-analyze on the plain trace alone: 7 us exposed + 3 us slowdown against lone instances = 0.010 ms
    assert math.isclose(row["plain_added_ms"], 0.010, abs_tol=1e-9) and math.isclose(row["plain_error"], -0.75)
    assert math.isclose(row["plain_step_ms"], 0.055, abs_tol=1e-9)
    for column in ("hta_overlap_pct", "tracelens_exposed_comm_ms", "tracelens_comm_ms"):
        assert math.isnan(row[column]) or row[column] >= 0
    # the probe's job step 0.060 against the truth's 0.08, its compute-only step 0.040 against 0.04
    assert "the probe -50 % off: its job step -25 % and its compute-only step +0 %" in row["explained"]
    assert "ob-analyze on the plain trace -75 % off" in row["explained"]
    meta = json.loads((tmp_path / "t.meta.json").read_text())
    assert set(meta["tools"]) == {"HolisticTraceAnalysis", "TraceLens"} and "tool_failures" in meta
    assert side_by_side.steps_in(tmp_path / "job-plain" / "host_0.1.pt.trace.json") == 2  # the trace's two steps


@pytest.mark.parametrize("damage, named", [("no truth", "truth.json"), ("no plain trace", "holds no trace"),
                                            ("no plain folder", "is not a folder"),
                                            ("a truth without its numbers", "truth_step_ms"),
                                            ("a truth that is no JSON", "not a probe's truth")])
def test_bad_jobs_are_one_line_and_exit_2(tmp_path, damage, named):
    folder = job(tmp_path)
    if damage == "no truth":
        (folder / "truth.json").unlink()
    elif damage == "a truth without its numbers":
        (folder / "truth.json").write_text(json.dumps({"truth_step_ms": "0.08"}))
    elif damage == "a truth that is no JSON":
        (folder / "truth.json").write_text("{")
    elif damage == "no plain trace":
        for path in (tmp_path / "job-plain").iterdir():
            path.unlink()
    else:
        shutil.rmtree(tmp_path / "job-plain")
    result = run_command([*tool("side_by_side"), folder, "--csv", tmp_path / "t.csv"], tmp_path)
    assert named in one_error_line(result, "side_by_side.py: error: ")
    assert not (tmp_path / "t.csv").exists() and not (tmp_path / "t.meta.json").exists()
