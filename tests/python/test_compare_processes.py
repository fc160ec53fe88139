"""ob-compare with many contenders per process (issue 49) and as safe as the binaries (issue 53): a row selector on a
process's summary, groups resolved per configuration, every ratio split into its compute-only and overhead factors,
and an output folder each invocation owns (a lock, a staging folder, a commit of the whole set), contender times
checked, names that cannot collide, and nothing of a run left running."""
import json
import math
import pathlib
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from conftest import REPO
from overlap_bench.compare import compare
from overlap_bench.core import compare_stats
from test_compare import COMPARE, FAKE, alive, fake, ob_compare


def process(name, cases, jitter=0.0, extra=""):
    """A fake process writing one overlap and one compute row per case (compute: half the step)."""
    flags = " ".join(f"--case {case}={ms}" for case, ms in cases.items())
    return f"{name}={sys.executable} {FAKE} --ms 1 --jitter {jitter} {flags} --csv {{csv}} {extra}".strip()


def test_contenders_read_rows_of_shared_processes_in_their_groups(tmp_path):
    out = tmp_path / "cmp"
    result = ob_compare("--out", out, "--rounds", 3, "--seed", 9, "--baseline", "ddp25,ddp64",
                        "--process", process("p4", {"nccl-a": 6.0, "ce-a": 5.0, "nccl-b": 12.0, "ce-b": 13.0}),
                        "--process", process("ddp", {"d25-a": 8.0, "d64-a": 7.5, "d25-b": 11.0, "d64-b": 12.5}),
                        *[arg for label, proc, case in
                          [("nccl@a", "p4", "nccl-a"), ("ce@a", "p4", "ce-a"), ("nccl@b", "p4", "nccl-b"),
                           ("ce@b", "p4", "ce-b"), ("ddp25@a", "ddp", "d25-a"), ("ddp64@a", "ddp", "d64-a"),
                           ("ddp25@b", "ddp", "d25-b"), ("ddp64@b", "ddp", "d64-b")]
                          for arg in ("--contender", f"{label}=@{proc}[case={case}]")])
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(out / "compare.csv").set_index("contender")
    # one process run per round and process, not per contender
    assert sorted(p.name for p in (out / "runs").glob("*.csv")) == [f"r{r}-{p}.csv" for r in range(3)
                                                                    for p in ("ddp", "p4")]
    # each group against its own baseline: a against ddp64@a (7.5), b against ddp25@b (11)
    assert table.loc["ce@a", "baseline"] == "ddp25@a,ddp64@a" and table.loc["ce@a", "baseline_pick"] == "ddp64@a"
    assert math.isclose(table.loc["ce@a", "ratio"], 5.0 / 7.5) and table.loc["ce@a", "verdict"] == "faster"
    assert table.loc["nccl@b", "baseline_pick"] == "ddp25@b" and math.isclose(table.loc["nccl@b", "ratio"], 12 / 11)
    assert table.loc["ce@a", "group"] == "a" and table.loc["ce@a", "label"] == "ce"
    # the compute-only rows of the same processes: half of each step, so the compute factor is the ratio
    assert math.isclose(table.loc["ce@a", "compute_ratio"], 5.0 / 7.5) and table.loc["ce@a", "overhead"] == 2.0
    assert math.isclose(table.loc["ce@a", "overhead_ratio"], 1.0) and table.loc["ce@a", "carried_by"] == "compute"
    rounds = pd.read_csv(out / "compare.rounds.csv")
    assert len(rounds) == 24 and set(rounds["process"]) == {"p4", "ddp"}
    meta = json.loads((out / "compare.meta.json").read_text())
    assert [p["name"] for p in meta["processes"]] == ["p4", "ddp"] and len(meta["round_seeds"]) == 3
    assert meta["contenders"][0] == {"name": "nccl@a", "process": "p4", "mode": "overlap",
                                     "selector": {"case": "nccl-a"}}
    assert "ce@a is faster than the fastest of ddp25@a,ddp64@a (ddp64@a) by 33 %" in result.stdout


def test_each_round_gives_a_process_a_seed_of_its_own(tmp_path):
    seeds = tmp_path / "seeds"
    command = f"echo {{seed}} >> {seeds}; " + process("p", {"x": 5, "y": 6}).split("=", 1)[1]
    result = ob_compare("--out", tmp_path / "c", "--rounds", 3, "--seed", 7, "--process", f"p={command}",
                        "--contender", "x=@p[case=x]", "--contender", "y=@p[case=y]")
    assert result.returncode == 0, result.stderr
    got = [int(s) for s in seeds.read_text().split()]
    assert got == [compare_stats.round_seed(7, r) for r in range(3)] and len(set(got)) == 3


def test_the_factor_split_arithmetic():
    steps = {"a": [6.0, 6.2, 5.9, 6.1], "b": [10.0, 10.4, 9.8, 10.2]}
    computes = {"a": [5.0, 5.1, 4.9, 5.0], "b": [5.0, 5.2, 4.9, 5.1]}
    split = compare_stats.factor_ratios(steps, computes, "a", ["b"], seed=1)
    assert math.isclose(split["ratio"], np.median(steps["a"]) / np.median(steps["b"]))
    assert math.isclose(split["compute_ratio"], np.median(computes["a"]) / np.median(computes["b"]))
    own = np.median(np.divide(steps["a"], computes["a"])) / np.median(np.divide(steps["b"], computes["b"]))
    assert math.isclose(split["overhead_ratio"], own)
    for key in ("ratio", "compute", "overhead"):
        lo, hi = split[f"{key}_ci_lo"], split[f"{key}_ci_hi"]
        value = split["ratio" if key == "ratio" else f"{key}_ratio"]
        assert lo <= value <= hi or math.isclose(lo, value) or math.isclose(hi, value)
    # the ratio is (nearly) the product of its factors, and the overhead carries this one
    assert math.isclose(split["ratio"], split["compute_ratio"] * split["overhead_ratio"], rel_tol=0.02)
    row = {"ratio": split["ratio"], "compute_ratio": split["compute_ratio"], "overhead_ratio": split["overhead_ratio"]}
    assert compare_stats.carrier(row) == "overhead"
    # without compute-only times on either side there is no split
    assert math.isnan(compare_stats.factor_ratios(steps, {"a": [math.nan] * 4, "b": computes["b"]}, "a", ["b"],
                                                  seed=1)["compute_ratio"])


def test_the_sentence_says_which_factor_carries_the_gain():
    row = {"contender": "ce", "baseline": "ddp25,ddp64", "baseline_pick": "ddp64", "verdict": "faster",
           "ratio": 0.65, "ratio_ci_lo": 0.64, "ratio_ci_hi": 0.66, "rounds": 3, "unstable": 0,
           "compute_ratio": 0.79, "compute_ci_lo": 0.78, "compute_ci_hi": 0.80, "overhead_ratio": 0.82,
           "overhead_ci_lo": 0.81, "overhead_ci_hi": 0.83, "median_ci_rel": 0.01}
    assert compare_stats.sentence(row) == (
        "ce is faster than the fastest of ddp25,ddp64 (ddp64) by 35 %: 0.650x [0.640, 0.660] over 3 rounds; "
        "compute 0.790x [0.780, 0.800], overlap overhead 0.820x [0.810, 0.830]: the compute carries it")


def test_a_step_faster_than_its_own_compute_only_step_is_flagged(tmp_path):
    # compute 12 ms against a step of 6: the baseline of the split is broken, and the table says so
    command = (f"{sys.executable} -c \"import sys; open(sys.argv[1], 'w').write('system,phase,mode,ranks,chunks,"
               f"iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max\\\\nx,phase4,overlap,1,1,5,6,6,6,6\\\\n"
               f"x,phase4,compute,1,1,5,12,12,12,12\\\\n')\" {{csv}}")
    result = ob_compare("--out", tmp_path / "c", "--rounds", 2, "--contender", f"broken={command}",
                        "--contender", fake("ok", 8.0))
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(tmp_path / "c" / "compare.csv").set_index("contender")
    assert table.loc["broken", "beats_compute"] == 1 and table.loc["ok", "beats_compute"] == 0
    assert "broken baseline" in result.stdout


@pytest.mark.parametrize("ms", ["0", "-0.5"])
def test_a_time_that_is_not_positive_is_a_failed_contender(tmp_path, ms):
    result = ob_compare("--out", tmp_path / "c", "--rounds", 2, "--contender", fake("ok", 5.0),
                        "--contender", fake("zero", ms))
    assert result.returncode == 3 and "time_ms_p50" in result.stderr and "is not a time in" in result.stderr, \
        result.stderr  # the summary schema's range, checked as the row is read
    assert "Traceback" not in result.stderr and not (tmp_path / "c" / "compare.csv").exists()
    # nothing staged is left behind; the runs' logs are kept for the failure (failed-runs/, issue 75)
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["failed-runs"]
    assert any(p.name.endswith(".log") for p in (tmp_path / "c" / "failed-runs").iterdir())


def test_a_comparison_never_reads_a_file_it_did_not_write(tmp_path):
    # a cut comparison left its runs; a contender that exits 0 without writing must not be read from them
    out = tmp_path / "c"
    (out / "runs").mkdir(parents=True)
    stale = "system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max\n" \
            "x,phase4,overlap,1,1,5,50,50,50,50\n"
    for r in range(2):
        (out / "runs" / f"r{r}-silent.csv").write_text(stale)
    result = ob_compare("--out", out, "--rounds", 2, "--contender", fake("ok", 5.0), "--contender", "silent=true {csv}")
    assert result.returncode == 3 and "wrote no summary" in result.stderr, result.stderr
    assert not (out / "compare.csv").exists()


def test_two_comparisons_into_one_folder_do_not_both_run(tmp_path):
    out = tmp_path / "c"
    first = subprocess.Popen([*COMPARE, "--out", str(out), "--rounds", "2", "--contender", fake("a", 5.0),
                              "--contender", fake("b", 6.0, 0.0, f"--sleep 3 --pid-file {tmp_path / 'pid'}")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "pid").is_file():
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.05)
    second = ob_compare("--out", out, "--rounds", 2, "--contender", fake("a", 5.0), "--contender", fake("b", 6.0))
    assert second.returncode == 2 and "is writing it" in second.stderr, second.stderr
    assert first.wait(timeout=120) == 0
    assert pd.read_csv(out / "compare.csv")["rounds"].eq(2).all()


@pytest.mark.parametrize("args, named", [
    (["--process", "p.timeline=x {csv}", "--contender", "a=@p.timeline", "--contender", "b=y {csv}"], "no dot"),
    (["--contender", "p.x=x {csv}", "--contender", "b=y {csv}"], "no dot"),
    (["--contender", "a=@nope[k=v]", "--contender", "b=y {csv}"], "no --process 'nope'"),
    (["--process", "p=x {csv}", "--contender", "a=@p[k]", "--contender", "b=@p"], "KEY=VALUE"),
    (["--process", "p=x {csv}", "--process", "q=y {csv}", "--contender", "a=@p", "--contender", "b=@p"],
     "no contender reads it"),
    (["--process", "p=x {csv}", "--contender", "p=y {csv}", "--contender", "b=@p"], "named twice"),
    (["--process", "p=x {csv}", "--contender", "a@g=@p", "--contender", "b@g=@p", "--baseline", "c"], "--baseline"),
])
def test_bad_invocation_of_compare_processes(tmp_path, args, named):
    result = ob_compare("--out", tmp_path / "never", *args)
    assert result.returncode == 2 and named in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "never").exists()


def test_what_a_run_leaves_running_ends_with_it(tmp_path):
    result = ob_compare("--out", tmp_path / "c", "--rounds", 2, "--contender", fake("a", 5.0),
                        "--contender", fake("b", 6.0, 0.0, f"--background --pid-file {tmp_path / 'pid'}"))
    assert result.returncode == 0, result.stderr
    assert not alive(int((tmp_path / "pid").read_text()))


def test_a_selection_of_no_row_names_its_contender_and_process(tmp_path):
    result = ob_compare("--out", tmp_path / "c", "--rounds", 2, "--process", process("p", {"x": 5, "y": 6}),
                        "--contender", "x=@p[case=x]", "--contender", "z=@p[case=z]")
    # found after the process ran (its rows are its output): a failed run, exit 3, as a contender missing its row
    assert result.returncode == 3 and "contender 'z'" in result.stderr and "case=z" in result.stderr
    assert not (tmp_path / "c" / "compare.csv").exists()


def test_select_matches_numbers_as_numbers_and_skips_empty_keys_for_the_compute_row():
    frame = pd.DataFrame({"mode": ["overlap", "overlap", "compute"], "bucket_mb": [25.0, 64.0, math.nan],
                          "hidden": [4096, 4096, 4096], "time_ms_p50": [1.0, 2.0, 0.5]})
    picked = compare.select(frame, "overlap", (("bucket_mb", "25"), ("hidden", "4096.0")))
    assert picked["time_ms_p50"].tolist() == [1.0]
    assert compare.select(frame, "compute", (("bucket_mb", "25"),)).empty
    assert compare.select(frame, "compute", (("bucket_mb", "25"),), ignore_empty=True)["time_ms_p50"].tolist() == [0.5]


def test_docs_name_every_new_column():
    text = (REPO / "METRICS.md").read_text()
    for column in ("compute_ratio", "overhead_ratio", "carried_by", "beats_compute", "baseline_spec"):
        assert f"`{column}`" in text, column
    assert pathlib.Path(compare.__file__).name == "compare.py"
