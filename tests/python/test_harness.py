"""The common harness (issue 16): phases 2 and 3 write the same columns, modes and configuration values as before
the loop and the overlap derivation moved into common/ (golden CSVs of commit 26924db in tests/data/golden); every
overlapped row's metrics are the formulas of METRICS.md (ob_metrics.py, shared with bench_ddp.py) applied to the
run's own rows; the metadata names the configuration columns."""
import json
import math
import os
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from conftest import REPO, run
from overlap_bench.core import ob_csv
from overlap_bench.core import ob_metrics

GOLDEN = REPO / "tests" / "data" / "golden"
PROVENANCE = ["commit", "hardware", "host_count"]
TIMES = [c for c in ob_csv.SUMMARY_COLUMNS if c.startswith("time_ms")] + ["time_ms_mean", "time_ms_stddev"]
MEASURED = {"chunk_compute_ms_p50", "chunk_comm_ms_p50", "compute_total_ms_p50", "speedup", "overlap_efficiency",
            "overlap_pct", "compute_slowdown", "algbw_GBps", "busbw_GBps"}


def phase2_runs(phase2, out):
    runs = {"p2syn": ["--chunks", "4", "--compute-ms", "2", "--comm-ms", "1"],
            "p2real": ["--workload", "real", "--chunk-rows", "16", "--hidden", "64", "--virtual-ranks", "4", "--check"]}
    for name, args in runs.items():
        result = run(phase2, *args, "--iters", "3", "--warmup", "1", "--csv", out / f"{name}.csv", "-q")
        assert result.returncode == 0, result.stderr
    return list(runs)


def phase3_run(build_dir, out):
    phase3 = build_dir / "phase3_mpi_cuda" / "phase3_mpi_cuda"
    if not (shutil.which("mpirun") and phase3.exists()):
        return []
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    result = subprocess.run(["mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none", str(phase3), "--check",
                             "--device", "cpu", "--iters", "3", "--warmup", "1", "--csv", str(out / "p3.csv"), "-q"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    return ["p3"]


@pytest.fixture(scope="module")
def today(phase2, build_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("harness")
    return out, phase2_runs(phase2, out) + phase3_run(build_dir, out)


def test_same_columns_modes_and_configuration_as_before(today):
    out, names = today
    for name in names:
        before, now = pd.read_csv(GOLDEN / f"{name}.csv"), pd.read_csv(out / f"{name}.csv")
        # The provenance columns (commit, hardware, host count) came later, and name this run, not the golden one.
        assert list(now.columns[-len(PROVENANCE):]) == PROVENANCE, name
        now = now.drop(columns=[c for c in PROVENANCE if c not in before.columns])
        # So did the confidence intervals of the metrics, and whether each is resolved.
        now = now.drop(columns=[c for c in now.columns if c.endswith(("_ci_lo", "_ci_hi", "_resolved"))
                                and c not in before.columns])
        # And every row's spread (time_ms_p50_ci_rel, unstable), and phase 3's ranks a GPU (--share-gpu, round 6).
        now = now.drop(columns=["time_ms_p50_ci_rel", "unstable"] + [c for c in ("ranks_per_gpu",)
                                                                      if c in now.columns and c not in before.columns])
        assert sorted(now.columns) == sorted(before.columns), name
        assert sorted(now["mode"]) == sorted(before["mode"]), name
        fixed = [c for c in before.columns if c not in MEASURED and c not in TIMES]
        for mode in before["mode"]:
            want = before[before["mode"] == mode][fixed].iloc[0]
            got = now[now["mode"] == mode][fixed].iloc[0]
            pd.testing.assert_series_equal(got, want, check_names=False, obj=f"{name} {mode}")
        # the derived metrics stand on the same rows as before
        for column in MEASURED:
            if column in before.columns:
                now_set = now.set_index("mode").loc[before["mode"], column].notna().values
                assert (before[column].notna() == now_set).all()


def test_overlap_metrics_are_the_documented_formulas(today):
    out, names = today
    for name in names:
        frame = pd.read_csv(out / f"{name}.csv").set_index("mode")
        t = frame["time_ms_p50"]
        t_seq = t["seq"] if "seq" in t else t["compute"] + t["comm"]
        for mode in ("overlap", "thread", "nonblocking"):
            if mode not in frame.index:
                continue
            want = ob_metrics.overlap_metrics(t_seq, t["compute"], t["comm"], t[mode])
            want["compute_slowdown"] = ob_metrics.compute_slowdown(frame.loc[mode, "compute_total_ms_p50"],
                                                                   frame.loc["compute", "compute_total_ms_p50"])
            for column, value in want.items():
                assert math.isclose(frame.loc[mode, column], value, rel_tol=1e-6, abs_tol=1e-9), (name, mode, column)
        assert math.isclose(t["ideal"], ob_metrics.ideal_ms(t["compute"], t["comm"]), rel_tol=1e-6)


def test_every_metric_has_an_interval_around_it(today):
    """speedup, overlap_efficiency and overlap_pct on every overlapped row lie inside their 95 % bootstrap
    intervals over the iterations (METRICS.md, "Confidence")."""
    out, names = today
    for name in names:
        summary = pd.read_csv(out / f"{name}.csv")
        overlapped = summary[summary["speedup"].notna()]
        assert not overlapped.empty, name
        for metric in ("speedup", "overlap_efficiency", "overlap_pct"):
            lo, hi, value = overlapped[f"{metric}_ci_lo"], overlapped[f"{metric}_ci_hi"], overlapped[metric]
            assert (lo <= hi).all() and (lo <= value + 1e-9).all() and (value <= hi + 1e-9).all(), (name, metric)


def test_every_measured_row_carries_its_spread(today):
    """time_ms_p50_ci_rel: the relative half-width of the median's 95 % interval; unstable where it exceeds 5 %
    (METRICS.md, "Steady state"). Derived rows of phases 2 and 3 (ideal, bound) have none (phase 4's bound rows carry
    their inputs': test_bound_rows.cpp)."""
    out, names = today
    for name in names:
        summary = pd.read_csv(out / f"{name}.csv")
        measured = summary[~summary["mode"].isin(["ideal", "bound", "bound_ref"])]
        assert (measured["time_ms_p50_ci_rel"] >= 0).all(), name
        assert (summary["unstable"] == (summary["time_ms_p50_ci_rel"] > 0.05).astype(int)).all(), name
        assert summary[summary["mode"].isin(["ideal", "bound"])]["time_ms_p50_ci_rel"].isna().all(), name


def test_metadata_declares_the_configuration_columns(today):
    out, names = today
    for name in names:
        meta = json.loads((out / f"{name}.meta.json").read_text())
        header = list(pd.read_csv(out / f"{name}.csv", nrows=0).columns)
        declared = meta["config_columns"]
        assert set(declared) <= set(header)
        assert {"system", "phase", "ranks", "chunks"} <= set(declared)
        assert not set(declared) & (MEASURED | set(TIMES) | {"mode", "wrong"}), name
        assert ob_csv.load_summary(out / f"{name}.csv").attrs["config_columns"] == declared


def test_python_formulas_edge_cases():
    assert math.isnan(ob_metrics.overlap_efficiency(0, 5, 5))
    assert ob_metrics.overlap_pct(20, 10, 5) == 0.0   # slower than sequential: clamped
    assert ob_metrics.overlap_pct(9, 10, 5) == 100.0
    assert ob_metrics.allreduce_busbw_GBps(100, 1) == 0
    assert math.isclose(ob_metrics.algbw_GBps(1e9, 1000), 1.0)


def test_the_python_rows_carry_the_binaries_spread_and_unstable_flag():
    """bench_ddp's rows (ddp_steps.stats) carry the summary's time_ms_p50_ci_rel and unstable as the binaries compute
    them (common/metrics.cpp): the median's 95 % bootstrap interval over the iterations, its relative half-width,
    unstable above the one threshold (common/metrics.hpp's kUnstableCiRel, read from the header here)."""
    from overlap_bench.ddp import ddp_steps

    header = (REPO / "common" / "metrics.hpp").read_text()
    assert f"kUnstableCiRel = {ob_metrics.UNSTABLE_CI_REL};" in header
    samples = 100 + np.random.default_rng(7).normal(0, 1, 400)
    steady = ddp_steps.stats(list(samples))
    # the median of n normal samples spreads as 1.2533 sigma / sqrt(n): the interval's half-width is 1.96 of that
    assert steady["time_ms_p50_ci_rel"] == pytest.approx(1.96 * 1.2533 / 20 / 100, rel=0.35)
    assert steady["unstable"] == 0 and steady["time_ms_p50"] == np.median(samples)
    noisy = ddp_steps.stats([10, 30, 12, 28, 11, 29, 10.5])
    assert noisy["unstable"] == 1 and noisy["time_ms_p50_ci_rel"] > ob_metrics.UNSTABLE_CI_REL
    assert math.isnan(ddp_steps.stats([5.0])["time_ms_p50_ci_rel"])


def test_the_python_baseline_times_as_many_iterations_as_the_binaries():
    """bench_ddp's --min-time-ms chooses its timed iterations by the binaries' rule (common/iteration.cpp, its cap
    read from the header): the cases of tests/unit/test_iteration.cpp give the same counts."""
    from overlap_bench.ddp import ddp_steps

    header = (REPO / "common" / "iteration.hpp").read_text()
    assert f"kMostMinTimeIters = {ddp_steps.MOST_MIN_TIME_ITERS};" in header
    cases = [(0, [2, 2, 2], 10), (200, [], 10), (200, [90, 2, 2.1, 1.9], 100), (200, [3, 3, 3], 67),
             (200, [50, 50, 50], 10), (200, [0.001] * 3, ddp_steps.MOST_MIN_TIME_ITERS)]
    for min_time, warmup_ms, count in cases:
        assert ddp_steps.timed_iters(10, min_time, warmup_ms) == count, (min_time, warmup_ms)
    assert ddp_steps.timed_iters(5000, 200, [0.001] * 3) == 5000


def test_the_python_baseline_splits_its_passes_as_phase_4():
    """bench_ddp's --passes: pass k times iters // P, the first iters mod P passes one more, and a P-th of the minimum
    time, as phase 4's run_passes (the rule read from schedule/mode_run.cu)."""
    import argparse

    from overlap_bench.ddp import ddp_steps

    source = (REPO / "phase4_chunked_nccl" / "schedule" / "mode_run.cu").read_text()
    assert "iters / passes + (pass < iters % passes ? 1 : 0), min_time_ms / passes" in source
    args = argparse.Namespace(iters=12, min_time_ms=90.0, warmup=5)
    assert [ddp_steps.pass_share(args, 5, k).iters for k in range(5)] == [3, 3, 2, 2, 2]
    assert [ddp_steps.pass_share(args, 3, k).min_time_ms for k in range(3)] == [30.0] * 3
    assert ddp_steps.pass_share(args, 1, 0).iters == 12 and args.iters == 12 and args.warmup == 5  # args untouched


def test_the_files_columns_are_declared_once_in_the_schema(tmp_path, phase2):
    """overlap_bench/core/schema.json is the one declaration of the CSV files' columns: a binary's summary starts with
    its summary.leading and its timeline is its timeline.columns (embedded when the binary was built), and the Python
    readers require what it says."""
    schema = json.loads((REPO / "overlap_bench" / "core" / "schema.json").read_text())
    result = run(phase2, "--chunks", "3", "--compute-ms", "1", "--comm-ms", "1", "--iters", "3", "--warmup", "1",
                 "--csv", tmp_path / "p.csv", "--timeline", tmp_path / "p.timeline.csv")
    assert result.returncode == 0, result.stderr
    header = (tmp_path / "p.csv").read_text().splitlines()[0].split(",")
    assert header[:len(schema["summary"]["leading"])] == schema["summary"]["leading"]
    assert (tmp_path / "p.timeline.csv").read_text().splitlines()[0].split(",") == schema["timeline"]["columns"]
    meta = json.loads((tmp_path / "p.meta.json").read_text())
    assert schema["summary"]["config"] == [c for c in meta["config_columns"] if c in schema["summary"]["config"]]
    assert ob_csv.SUMMARY_COLUMNS == schema["summary"]["required"] and ob_csv.NUMERIC["timeline"] == \
        schema["timeline"]["numeric"]
    for kind in ("summary", "timeline", "power"):
        listed = schema[kind].get("columns", schema[kind].get("leading"))
        assert set(schema[kind]["required"]) <= set(listed) and set(schema[kind]["numeric"]) <= set(listed)
