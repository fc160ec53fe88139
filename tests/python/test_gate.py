"""The before/after gate of a change to GPU code (ob-gate, issue 49): a regression beyond the threshold named and
exit 1, the same build on both sides passing, the verdict read from the interval, and bad invocations refused."""
import stat
import subprocess
import sys

import pandas as pd
import pytest

from conftest import tool
from overlap_bench.compare import gate


def fake_build(root, ms):
    """A 'build' whose phase4_chunked_nccl writes a sync sweep's overlap rows: nccl at `ms`, ce at 11.5 ms."""
    binary = root / "phase4_chunked_nccl" / "phase4_chunked_nccl"
    binary.parent.mkdir(parents=True)
    binary.write_text(f"#!{sys.executable}\nimport sys\nargs = sys.argv\ncsv = args[args.index('--csv') + 1]\n"
                      "h = 'system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max,"
                      "sync'\n"
                      f"rows = [f'x,phase4,overlap,2,8,5,{{t}},{{t}},{{t}},{{t}},{{s}}' for s, t in "
                      f"(('nccl', {ms}), ('ce', 11.5))]\n"
                      "open(csv, 'w').write('\\n'.join([h] + rows) + '\\n')\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    return root


def test_the_gate_names_a_regression_and_exits_1(tmp_path):
    before, after = fake_build(tmp_path / "before", 10.0), fake_build(tmp_path / "after", 10.6)
    command = [*tool("gate.py"), "--base-build", before, "--build", after, "--out",
               tmp_path / "gate", "--configs", "4096x16x512,1024x32x256", "--syncs", "nccl,ce", "--rounds", "2",
               "--seed", "3", "--command", "{binary} --sweep sync={syncs} --csv {csv}"]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    table = pd.read_csv(tmp_path / "gate" / "gate.csv")
    assert len(table) == 4 and set(table["sync"]) == {"nccl", "ce"}
    nccl = table[table["sync"] == "nccl"]
    assert (nccl["regressed"] == 1).all() and nccl["ratio"].between(1.05, 1.07).all()
    assert (table[table["sync"] == "ce"]["regressed"] == 0).all()
    assert "regression: nccl on 4096x16x512" in result.stderr
    # the same build on both sides: nothing regresses, exit 0
    at = command.index("--build")
    same = command[:at + 1] + [before, "--out", tmp_path / "same"] + command[at + 4:]
    assert subprocess.run(same, capture_output=True, text=True).returncode == 0


def test_the_gate_verdict_is_the_interval_above_the_threshold():
    table = pd.DataFrame({"label": ["after", "after", "after", "before"], "group": ["nccl-4x1x1", "ce-4x1x1",
                                                                                 "nccl-sym-4x1x1", "nccl-4x1x1"],
                          "baseline_pick": ["before@nccl-4x1x1", "before@ce-4x1x1", "before@nccl-sym-4x1x1",
                                            "before@nccl-4x1x1"],
                          "median_ms": [1.0, 1.0, 1.0, 1.0], "ratio": [1.03, 1.03, 0.9, 1.0],
                          "ratio_ci_lo": [1.021, 1.019, 0.8, 1.0], "ratio_ci_hi": [1.04, 1.04, 0.95, 1.0],
                          "verdict": ["slower", "slower", "faster", "baseline"]})
    rows = gate.regressions(table, 1.02).set_index("sync")
    assert rows.loc["nccl", "regressed"] == 1 and rows.loc["ce", "regressed"] == 0
    assert rows.loc["nccl-sym", "regressed"] == 0 and rows.loc["nccl-sym", "config"] == "4x1x1" and len(rows) == 3


@pytest.mark.parametrize("args, named", [([], "--base"), (["--base", "x", "--base-build", "y"], "--base"),
                                         (["--base-build", "y", "--configs", "4096x16"], "--configs"),
                                         (["--base-build", "y", "--threshold", "0.9"], "--threshold"),
                                         (["--base-build", "y", "--command", "{binary}"], "--command")])
def test_bad_invocation_of_gate(tmp_path, args, named):
    result = subprocess.run([*tool("gate.py"), "--out", tmp_path / "g", *args],
                            capture_output=True, text=True)
    assert result.returncode == 2 and named in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "g").exists()
