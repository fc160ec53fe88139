"""The tuner's arithmetic (overlap_bench/probe/tune.py, standard library only): its plan within the budget, each
setting's ratio to the job's own with its interval paired by round, the verdict (the fastest resolved setting, or keep
yours), tune.csv and the words; the wrapper rows' settings (torch where installed)."""
import csv
import importlib.util
import io
import json
import math
import subprocess
import sys

import pytest

from conftest import REPO
from overlap_bench.probe import tune
from overlap_bench.probe.wrappers import Setting

SETTINGS = [Setting("bucket_cap_mb=1", "DistributedDataParallel(..., bucket_cap_mb=1)"),
            Setting("bucket_cap_mb=100", "DistributedDataParallel(..., bucket_cap_mb=100)"),
            Setting("gradient_as_bucket_view=True", "DistributedDataParallel(..., gradient_as_bucket_view=True)")]


def test_the_plan_fits_the_budget_and_interleaves_every_setting_each_round():
    assert tune.rounds_for(200, 7) == 3 and tune.rounds_for(200, 4) == 5
    assert tune.rounds_for(30, 3) == 0 and tune.rounds_for(200, 0) == 0  # fewer than two rounds: none
    steps = tune.plan(3, 2)
    assert len(steps) == 2 * 3 * tune.PER_SETTING_ROUND <= 200
    for r in range(2):
        blocks = [s for kind, rr, s in steps if rr == r and kind == "tune"]
        assert sorted(set(blocks)) == [0, 1, 2] and len(blocks) == 3 * tune.PER_BLOCK
    first = steps[:tune.PER_SETTING_ROUND]
    assert [k for k, *_ in first] == ["tune-own-warmup"] + ["tune-own"] * 3 + ["tune-warmup"] * 2 + ["tune"] * 3
    assert tune.plan(3, 2) == steps and tune.plan(3, 2, seed=1) != steps  # the same order on every rank


def test_half_the_budget_screens_every_setting_and_the_rest_races_the_two_leading():
    assert tune.stages(200, 6) == (2, 5) and tune.stages(200, 4) == (2, 7)  # 108 + 90, 72 + 126 steps of 200
    assert tune.stages(1000, 6) == (9, 28) and tune.stages(200, 2) == (11, 0)  # two settings: all screening
    assert tune.stages(100, 6) == (0, 0)  # two screening rounds of six need 108
    for budget, count in ((200, 6), (200, 4), (1000, 6), (200, 2), (500, 3)):
        screen, race = tune.stages(budget, count)
        used = len(tune.plan(count, screen)) + len(tune.plan(min(count, tune.RACE_KEEP), race, first=screen))
        assert used <= budget and budget - used < tune.PER_SETTING_ROUND * tune.RACE_KEEP + tune.PER_SETTING_ROUND
    racing = tune.plan([1, 3], 2, seed=1, first=2)
    assert {s for *_, s in racing} == {1, 3} and {r for _, r, _ in racing} == {2, 3}


def test_the_race_takes_the_two_lowest_ratios_not_resolved_slower():
    found = samples([0.95, 1.30, 0.80, 0.99])
    assert tune.leading(found, 4) == [0, 2]  # 0.80 and 0.95; 1.30 resolved slower
    assert tune.leading(samples([1.2, 1.3, 1.4]), 3) == []  # every one resolved slower: no race
    # the rounds of both stages are analysed together, each setting its own
    raced = found + [(k, r + 3, s, ms) for k, r, s, ms in samples([0.80, 0.80, 0.80]) if s in (0, 2)]
    four = SETTINGS + [Setting("bucket_cap_mb=5", "DistributedDataParallel(..., bucket_cap_mb=5)")]
    rows = [row["rounds"] for row in tune.analyse(raced, four, "x")["settings"]]
    assert rows == [6, 3, 6, 3]


def samples(ratios, own=10.0, rounds=3, jitter=(0.99, 1.0, 1.01)):
    """The tuner's steps for settings whose step is `ratios[i]` times the job's own, each block three steps."""
    found = []
    for r in range(rounds):
        for i, ratio in enumerate(ratios):
            found += [("tune-own", r, i, own * j) for j in jitter] + [("tune", r, i, own * ratio * j) for j in jitter]
    return found


def test_the_fastest_resolved_setting_is_the_verdict_with_its_interval():
    result = tune.analyse(samples([0.80, 1.10, 0.95]), SETTINGS, "bucket_cap_mb=25")
    rows = {row["setting"]: row for row in result["settings"]}
    assert math.isclose(rows["bucket_cap_mb=1"]["ratio"], 0.80) and rows["bucket_cap_mb=1"]["verdict"] == "faster"
    assert rows["bucket_cap_mb=100"]["verdict"] == "slower" and rows["bucket_cap_mb=1"]["best"]
    assert all(row["ci_lo"] <= row["ratio"] <= row["ci_hi"] for row in rows.values())
    assert result["best"] == "bucket_cap_mb=1" and math.isclose(result["gain"], 0.20)
    words = tune.sentences(result)[0]
    assert "Paste: DistributedDataParallel(..., bucket_cap_mb=1)" in words and "20.0 % faster" in words
    table = list(csv.DictReader(io.StringIO(tune.csv_text(result))))
    assert [row["setting"] for row in table] == [s.key for s in SETTINGS] and table[0]["best"] == "True"
    assert table[0]["paste"] == "DistributedDataParallel(..., bucket_cap_mb=1)"  # a comma inside, quoted


def test_keep_yours_where_no_setting_is_resolved_faster():
    noisy = samples([1.0, 1.3, 0.99], jitter=(0.8, 1.0, 1.25))
    result = tune.analyse(noisy, SETTINGS, "bucket_cap_mb=25")
    assert result["best"] is None and result["gain"] == 0.0 and tune.finite(result)
    words = tune.sentences(result)[0]
    assert "keep yours: none was resolved faster" in words and "Paste" not in words and "nan" not in words
    assert tune.sentences(tune.analyse([], SETTINGS, "x")) == ["tune: no setting was tried"]


def test_the_interval_is_paired_by_round():
    """A drift between rounds that falls on both blocks alike leaves the ratio resolved."""
    drifting = []
    for r, level in enumerate((5.0, 10.0, 20.0)):
        drifting += [("tune-own", r, 0, level * j) for j in (0.99, 1.0, 1.01)]
        drifting += [("tune", r, 0, 0.9 * level * j) for j in (0.99, 1.0, 1.01)]
    own = {r: [ms for k, rr, _, ms in drifting if k == "tune-own" and rr == r] for r in range(3)}
    trial = {r: [ms for k, rr, _, ms in drifting if k == "tune" and rr == r] for r in range(3)}
    ratio, lo, hi = tune.ratio_interval(own, trial)
    assert math.isclose(ratio, 0.9) and hi < 1


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_the_ddp_row_s_ladder_is_around_the_job_s_own_cap():
    from overlap_bench.probe import ddp_row

    class Job:  # what the row reads of a DDP
        bucket_bytes_cap, gradient_as_bucket_view = 25 * 2**20, False

    row = ddp_row.DdpRow.__new__(ddp_row.DdpRow)
    row.model = row.called = Job()
    keys = [s.key for s in row.settings()]
    assert keys == ["bucket_cap_mb=1", "bucket_cap_mb=5", "bucket_cap_mb=10", "bucket_cap_mb=50",
                    "bucket_cap_mb=100", "gradient_as_bucket_view=True"]
    row.called = object()  # compiled: no cap below DDP's first bucket (1 MB)
    assert [s.key for s in row.settings()][0] == "bucket_cap_mb=1" and row.own() == "bucket_cap_mb=25"


def test_the_verdict_held_against_fresh_processes(tmp_path):
    tuned = {"best": "bucket_cap_mb=1", **tune.analyse(samples([0.80, 1.10, 0.95]), SETTINGS, "bucket_cap_mb=25")}
    probe, compare = tmp_path / "probe", tmp_path / "compare"
    probe.mkdir(), compare.mkdir()
    (probe / "probe.json").write_text(json.dumps({"tune": tuned}))
    (compare / "compare.csv").write_text("contender,ratio,ratio_ci_lo,ratio_ci_hi\nown,1,1,1\n"
                                         "bucket_cap_mb-1,0.82,0.80,0.84\nbucket_cap_mb-100,1.1,1.05,1.2\n"
                                         "gradient_as_bucket_view-True,0.81,0.79,0.83\n")
    result = subprocess.run([sys.executable, "-m", "overlap_bench.probe.tune_check", "--csv", tmp_path / "t.csv",
                             f"ddp={probe}:{compare}"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stderr
    row = next(csv.DictReader(open(tmp_path / "t.csv")))
    assert row["picked"] == "bucket_cap_mb=1" and row["fastest"] == "gradient_as_bucket_view-True"
    assert math.isclose(float(row["pick_over_fastest"]), 0.82 / 0.81) and row["within_3pct_of_fastest"] == "True"
    assert math.isclose(float(row["claim_error"]), 0.80 / 0.82 - 1) and row["claim_holds"] == "True"
    again = subprocess.run([sys.executable, "-m", "overlap_bench.probe.tune_check", "--csv", tmp_path / "u.csv",
                            f"ddp={probe}"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert again.returncode == 2 and "JOB=PROBE_DIR:COMPARE_DIR" in again.stderr and not (tmp_path / "u.csv").exists()
