"""ob-compare (issue 32): contenders as fresh processes, rounds shuffled from a recorded seed, per-round medians, the
ratio to a baseline with a paired bootstrap interval over rounds and a verdict; CSV, metadata and figure written whole;
a failing contender stops it with its exit code and leaves no comparison behind."""
import json
import math
import pathlib
import re
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from conftest import REPO, tool
from overlap_bench.compare import compare

FAKE = REPO / "tests" / "support" / "fake_contender.py"
COMPARE = [*tool("compare.py")]


def fake(name, ms, jitter=0.0, extra=""):
    return f"{name}={sys.executable} {FAKE} --ms {ms} --jitter {jitter} --csv {{csv}} {extra}".strip()


def ob_compare(*args, timeout=300):
    return subprocess.run([*COMPARE, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def test_orders_are_shuffled_permutations_replayed_by_their_seed():
    names = ["a", "b", "c", "d"]
    orders = compare.schedule(names, 8, seed=7)
    assert all(sorted(order) == names for order in orders)
    assert len({tuple(order) for order in orders}) > 1  # the order changes between rounds
    assert compare.schedule(names, 8, seed=7) == orders and compare.schedule(names, 8, seed=8) != orders


def test_bootstrap_ratio_interval_and_verdicts():
    times = {"fast": [8.0, 8.1, 7.9, 8.2, 8.0], "slow": [10.0, 10.2, 9.9, 10.1, 10.0],
             "same": [8.05, 7.95, 8.1, 8.0, 8.15]}
    ratio, lo, hi, pick = compare.bootstrap_ratios(times, "slow", ["fast"], seed=1)
    assert math.isclose(ratio, 10.0 / 8.0) and lo <= ratio <= hi and lo > 1 and pick == "fast"
    assert compare.verdict(lo, hi) == "slower"
    ratio, lo, hi, _ = compare.bootstrap_ratios(times, "fast", ["slow"], seed=1)
    assert hi < 1 and compare.verdict(lo, hi) == "faster"
    _, lo, hi, _ = compare.bootstrap_ratios(times, "same", ["fast"], seed=1)
    assert lo <= 1 <= hi and compare.verdict(lo, hi) == "not resolved"
    # a group baseline is its fastest member, chosen again in every resample
    ratio, _, _, pick = compare.bootstrap_ratios(times, "slow", ["slow", "fast"], seed=1)
    assert pick == "fast" and math.isclose(ratio, 1.25)


def test_rounds_are_paired_so_a_shared_drift_cancels():
    # every contender slowed alike in later rounds: unpaired, the spread hides a 2 % difference; paired, it shows.
    drift = [1.0, 1.3, 1.6, 1.9, 2.2, 2.5]
    times = {"base": [10.0 * d for d in drift], "other": [10.2 * d for d in drift]}
    ratio, lo, hi, _ = compare.bootstrap_ratios(times, "other", ["base"], seed=3)
    assert math.isclose(ratio, 1.02) and lo > 1.0 and hi < 1.05


def test_a_comparison_of_fake_contenders_end_to_end(tmp_path):
    out = tmp_path / "cmp"
    result = ob_compare("--out", out, "--rounds", 4, "--seed", 11, "--baseline", "base", "--baseline", "base,quick",
                        "--contender", fake("base", 10.0, 0.01), "--contender", fake("slow", 14.0, 0.01),
                        "--contender", fake("quick", 7.0, 0.01))
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(out / "compare.csv")
    by = {(r.contender, r.baseline): r for r in table.itertuples()}
    assert by[("slow", "base")].verdict == "slower" and by[("quick", "base")].verdict == "faster"
    assert math.isclose(by[("slow", "base")].ratio, 1.4, rel_tol=0.02)
    assert by[("base", "base")].verdict == "baseline"
    assert by[("slow", "base,quick")].baseline_pick == "quick"
    # the sentence: the ratio, its interval, and its two factors (the fake's compute-only row is half its step, so
    # the whole difference is compute)
    assert re.search(r"^slow is slower than base by \d+ %: 1\.\d+x \[1\.\d+, 1\.\d+\] over 4 rounds; compute "
                     r"1\.\d+x \[1\.\d+, 1\.\d+\], overlap overhead 1\.000x \[1\.000, 1\.000\]: the compute carries "
                     r"it$", result.stdout, re.M), result.stdout
    assert by[("quick", "base,quick")].verdict == "baseline"
    rounds = pd.read_csv(out / "compare.rounds.csv")
    assert len(rounds) == 12 and sorted(rounds["round"].unique()) == [0, 1, 2, 3]
    meta = json.loads((out / "compare.meta.json").read_text())
    assert meta["seed"] == 11 and meta["rounds"] == 4 and len(meta["orders"]) == 4
    assert [c["name"] for c in meta["contenders"]] == ["base", "slow", "quick"] and meta["commit"]
    # each contender ran as its own process: one summary per round and contender
    assert len(list((out / "runs").glob("r*-*.csv"))) == 12
    assert (out / "compare.png").stat().st_size > 1000
    # the order ran is the order recorded
    first = rounds[rounds["round"] == 0].sort_values("position")["contender"].tolist()
    assert first == meta["orders"][0]


def test_unstable_contender_is_marked(tmp_path):
    out = tmp_path / "cmp"
    result = ob_compare("--out", out, "--rounds", 5, "--seed", 5, "--contender", fake("steady", 10.0, 0.0),
                        "--contender", fake("wild", 10.0, 0.6, "--seed-from-round"))
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(out / "compare.csv").set_index("contender")
    assert table.loc["wild", "unstable"] == 1 and table.loc["steady", "unstable"] == 0
    assert "unstable" in result.stdout


@pytest.mark.parametrize("code", [1, 3, 77])
def test_a_failing_contender_stops_the_comparison_with_its_code(tmp_path, code):
    out = tmp_path / "cmp"
    result = ob_compare("--out", out, "--rounds", 2, "--seed", 1, "--contender", fake("ok", 5.0),
                        "--contender", fake("bad", 5.0, 0.0, f"--exit {code}"))
    assert result.returncode == {1: 1, 3: 3, 77: 77}[code], result.stderr
    assert "contender 'bad'" in result.stderr
    assert not (out / "compare.csv").exists()
    log = pathlib.Path(result.stderr.rsplit("(log: ", 1)[1].split(")", 1)[0])  # the log it names outlives the run
    assert log.parent == out / "failed-runs" and log.is_file(), result.stderr


def alive(pid):
    """Whether process `pid` still runs (a zombie, ended but not yet reaped by whoever adopted it, does not)."""
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def sleeper(name, tmp_path, round_index=None):
    """A contender that hangs (in one round, or every one) under a shell that outlives it, as mpirun's ranks do: the
    whole process group has to be ended, not only the shell."""
    extra = f"--sleep 300 --pid-file {tmp_path / 'pid'}" + (f" --sleep-round {round_index}" if round_index is not None
                                                            else "")
    return fake(name, 6.0, 0.0, extra) + "; true"


def test_a_run_past_its_timeout_ends_with_its_process_group(tmp_path):
    out = tmp_path / "cmp"
    result = ob_compare("--out", out, "--rounds", 2, "--timeout", 3, "--contender", fake("ok", 5.0),
                        "--contender", sleeper("hung", tmp_path))
    assert result.returncode == 3 and "ran past --timeout 3 s" in result.stderr, result.stderr
    assert not alive(int((tmp_path / "pid").read_text())) and not (out / "compare.csv").exists()


def test_a_deadline_drops_the_round_it_cuts_and_summarises_the_complete_ones(tmp_path):
    out = tmp_path / "cmp"
    start = time.monotonic()
    result = ob_compare("--out", out, "--rounds", 4, "--seed", 3, "--deadline", 12, "--contender", fake("a", 5.0),
                        "--contender", sleeper("b", tmp_path, round_index=2))
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - start < 60  # the deadline, not the 300 s sleep
    assert "stopped after 2 of 4 rounds" in result.stderr and "round 3 cut" in result.stderr
    assert not alive(int((tmp_path / "pid").read_text()))
    assert (pd.read_csv(out / "compare.csv")["rounds"] == 2).all()
    meta = json.loads((out / "compare.meta.json").read_text())
    assert meta["rounds"] == 2 and meta["rounds_planned"] == 4 and meta["deadline_s"] == 12
    assert "dropped" in meta["stopped"]
    assert sorted(p.name for p in (out / "runs").glob("*.csv")) == ["r0-a.csv", "r0-b.csv", "r1-a.csv", "r1-b.csv"]
    assert sorted(pd.read_csv(out / "compare.rounds.csv")["round"].unique()) == [0, 1]


def test_a_deadline_that_leaves_one_round_writes_no_comparison(tmp_path):
    out = tmp_path / "cmp"
    result = ob_compare("--out", out, "--rounds", 3, "--deadline", 5, "--contender", fake("a", 5.0),
                        "--contender", sleeper("b", tmp_path, round_index=1))
    assert result.returncode == 3 and "at least 2 are needed" in result.stderr, result.stderr
    assert not (out / "compare.csv").exists() and not alive(int((tmp_path / "pid").read_text()))


def test_a_signal_to_ob_compare_ends_the_running_contender_too(tmp_path):
    pid_file = tmp_path / "pid"
    process = subprocess.Popen([*COMPARE, "--out", str(tmp_path / "cmp"), "--rounds", "2", "--contender",
                                fake("a", 5.0), "--contender", sleeper("b", tmp_path)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not pid_file.is_file() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline and process.poll() is None, "the sleeping contender never started"
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 128 + signal.SIGTERM
    assert not alive(int(pid_file.read_text())) and not (tmp_path / "cmp" / "compare.csv").exists()


def test_a_round_starts_only_while_the_longest_so_far_fits():
    assert compare.next_round_fits(0.0, [], 1.0)  # the first always starts
    assert compare.next_round_fits(50.0, [20.0, 30.0], 80.0)
    assert not compare.next_round_fits(50.1, [20.0, 30.0], 80.0)
    assert compare.next_round_fits(1e9, [1e9], None)


def test_a_contender_with_no_such_row_is_named(tmp_path):
    result = ob_compare("--out", tmp_path / "c", "--rounds", 2, "--contender", fake("a", 5.0),
                        "--contender", fake("b:bound", 5.0))
    # found only once the contender ran: its output, not the invocation, is at fault (exit 3, as DESIGN.md's table)
    assert result.returncode == 3 and "contender 'b'" in result.stderr and "'bound' rows" in result.stderr


@pytest.mark.parametrize("args, named", [
    (["--contender", "a=x {csv}"], "two contenders"),
    (["--contender", "a=x {csv}", "--contender", "a=y {csv}"], "named twice"),
    (["--contender", "a=x", "--contender", "b=y {csv}"], "{csv}"),
    (["--contender", "a b=x {csv}", "--contender", "b=y {csv}"], "--contender"),
    (["--contender", "a=x {csv}", "--contender", "b=y {csv}", "--baseline", "c"], "--baseline"),
    (["--contender", "a=x {csv}", "--contender", "b=y {csv}", "--rounds", "1"], "--rounds"),
    (["--contender", "a=x {csv}", "--contender", "b=y {csv}", "--timeout", "nan"], "--timeout"),
    (["--contender", "a=x {csv}", "--contender", "b=y {csv}", "--deadline", "0"], "--deadline"),
    (["--contender", "a=x {csv}", "--contender", "b=y {csv}", "--seed", "-1"], "--seed"),
])
def test_bad_invocation_of_compare(tmp_path, args, named):
    result = ob_compare("--out", tmp_path / "never", *args)
    assert result.returncode == 2 and named in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "never").exists()


def test_a_folder_holding_a_comparison_is_not_replaced(tmp_path):
    (tmp_path / "compare.csv").write_text("kept\n")
    result = ob_compare("--out", tmp_path, "--contender", "a=x {csv}", "--contender", "b=y {csv}")
    assert result.returncode == 2 and (tmp_path / "compare.csv").read_text() == "kept\n"


def test_phase2_commands_as_contenders(tmp_path, phase2):
    """CPU contenders, as CI runs them: phase 2's synthetic workload at two compute times, fresh processes. Twelve
    times the compute per chunk and five rounds: a loaded machine that stalls a round of one contender cannot bring
    the interval down to 1 (seen with 2 against 6 ms and three rounds under two busy loops)."""
    base = f"{phase2} --chunks 4 --comm-ms 0.5 --iters 3 --warmup 1 -q --csv {{csv}}"
    out = tmp_path / "cmp"
    result = ob_compare("--out", out, "--rounds", 5, "--seed", 2, "--contender", f"c1={base} --compute-ms 1",
                        "--contender", f"c12={base} --compute-ms 12", timeout=600)
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(out / "compare.csv").set_index("contender")
    assert table.loc["c12", "verdict"] == "slower" and table.loc["c12", "ratio"] > 1
    assert json.loads((out / "compare.meta.json").read_text())["contenders"][0]["command"].startswith(str(phase2))


def test_the_report_says_a_comparison_in_words(tmp_path):
    from overlap_bench.report import report

    out = tmp_path / "cmp"
    result = ob_compare("--out", out, "--rounds", 3, "--seed", 4, "--contender", fake("base", 10.0, 0.01),
                        "--contender", fake("slow", 13.0, 0.01))
    assert result.returncode == 0, result.stderr
    text = report.write_report(out).read_text()
    assert re.search(r"^- slow is slower than base by \d+ %: 1\.\d+x \[", text, re.M), text
    assert "![compare.png](compare.png)" in text and "| contender |" in text


def test_another_row_of_the_same_runs_is_summarised_too(tmp_path):
    out = tmp_path / "cmp"
    result = ob_compare("--out", out, "--rounds", 3, "--seed", 2, "--baseline", "base", "--also-mode", "compute",
                        "--contender", fake("base", 10.0), "--contender", fake("slow", 14.0))
    assert result.returncode == 0, result.stderr
    extra = pd.read_csv(out / "compare.compute.csv").set_index("contender")
    assert math.isclose(extra.loc["slow", "ratio"], 1.4) and extra.loc["slow", "verdict"] == "slower"
    assert set(extra["mode"]) == {"compute"} and (extra["rounds"] == 3).all()
    # the same processes: each round's compute time is half its overlap time (the fake writes both)
    assert math.isclose(extra.loc["base", "median_ms"], 5.0)
    assert re.search(r"^\[compute\] slow is slower than base by 40 %: 1\.400x", result.stdout, re.M)
    # a row no contender holds is said, and no file is written for it
    result = ob_compare("--out", tmp_path / "c2", "--rounds", 2, "--also-mode", "bound",
                        "--contender", fake("a", 5.0), "--contender", fake("b", 6.0))
    assert result.returncode == 0 and "--also-mode bound" in result.stderr
    assert not (tmp_path / "c2" / "compare.bound.csv").exists()
    assert ob_compare("--out", tmp_path / "c3", "--also-mode", "overlap", "--contender", fake("a", 5.0),
                      "--contender", fake("b", 6.0)).returncode == 2
