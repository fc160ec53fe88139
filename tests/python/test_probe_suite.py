"""ob-probe-suite (issue 72): the suite's own DDP and FSDP2 jobs under the probe, each held against the truth bench_ddp
measures in the same process. Bad invocations exit 2 before any work (anywhere, torch or not: its arguments are
checked first); the run itself needs torch and a GPU (skipped without them, as on CI's CPU machine)."""
import json
import subprocess
import sys

import pandas as pd
import pytest

from conftest import REPO, one_error_line, run_command

SUITE = [sys.executable, "-m", "overlap_bench.probe.suite"]


@pytest.mark.parametrize("args, named", [
    (["--csv", "{work}/x.csv"], "--probe"),
    (["--csv", "{work}/x.csv", "--probe", "{work}/file"], "--probe"),
    (["--csv", "{work}/x.csv", "--probe", "{work}/p", "--graph"], "--probe"),
    (["--csv", "{work}/x.csv", "--probe", "{work}/p", "--iters", "0"], "--iters"),
])
def test_bad_invocations_exit_2_before_any_work(tmp_path, args, named):
    (tmp_path / "file").write_text("mine")
    result = run_command([*SUITE, *[a.replace("{work}", str(tmp_path)) for a in args]], tmp_path)
    assert named in one_error_line(result, "suite.py: error: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"] and (tmp_path / "file").read_text() == "mine"


def test_the_suite_s_jobs_under_the_probe(tmp_path):
    """One rank on one GPU: a DDP run and an FSDP2 run of a small configuration, each probed into its folder with the
    truth beside it; the probe's added time finite, its parts adding up, the replicas agreeing."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1", "-m",
                "overlap_bench.probe.suite"]
    for wrapper, extra in (("ddp25", ["--bucket-mb", "25"]), ("fsdp1", ["--fsdp", "--reshard-after-forward", "1"])):
        out = tmp_path / wrapper
        result = subprocess.run([*torchrun, "--configs", "1024,8,256", "--iters", "8", "--passes", "2", *extra,
                                 "--csv", tmp_path / f"{wrapper}.csv", "--probe", out], capture_output=True,
                                text=True, timeout=300, cwd=REPO)
        assert result.returncode == 0, result.stderr[-3000:]
        folder = out / f"1024x8x256-{wrapper}"
        probe, truth = (json.loads((folder / name).read_text()) for name in ("probe.json", "truth.json"))
        assert probe["replicas_agree"] and probe["probe_steps"] <= 40 and probe["ranks"] == 1
        assert truth["probe_added_ms"] == probe["added_ms"] and truth["steps"] == 8
        assert truth["truth_ci_lo_ms"] <= truth["truth_added_ms"] <= truth["truth_ci_hi_ms"]
        parts = pd.read_csv(folder / "analysis" / "analysis.parts.csv")
        assert parts[parts["adds"]]["scaled_ms"].sum() == pytest.approx(probe["added_ms"], rel=1e-6, abs=1e-9)
