"""The main job's verdict in words (issue 34): every overlapped mode's share hidden, slowdown, bound and speedup
with their intervals; the table's marks (!, n.r., ~) explained where they appear; crowded cores said."""
import subprocess

from overlap_bench.core import packs
from overlap_bench.report import verdict

from conftest import REPO, tool

HEADER = ("system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max,unstable,device,"
          "speedup,speedup_ci_lo,speedup_ci_hi,overlap_efficiency,overlap_pct,overlap_pct_ci_lo,overlap_pct_ci_hi,"
          "compute_slowdown")


def summary(tmp_path, rows, name="phase3.csv"):
    lines = [HEADER] + [",".join(map(str, r)) for r in rows]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def row(mode, ms, unstable=0, speedup="", lo="", hi="", eff="", pct="", plo="", phi="", slow=""):
    return ["overlap-bench", "phase3", mode, 2, 8, 10, ms, ms, ms, ms, unstable, "cpu", speedup, lo, hi, eff, pct, plo,
            phi, slow]


def test_sentences_say_the_verdict_with_intervals_and_explain_the_marks(tmp_path):
    path = summary(tmp_path, [row("compute", 6.0), row("comm", 4.0, unstable=1), row("seq", 10.0),
                              row("thread", 7.0, 0, 1.43, 1.3, 1.5, 0.75, 75, 60, 88, 0.05),
                              row("nonblocking", 12.0, 0, 0.83, 0.8, 0.86, -0.5, 0, 0, 0, 0.1),
                              row("bound", 6.5)])
    lines = verdict.verdict(path, cores=64)
    text = "\n".join(lines)
    assert lines[0] == ("phase3: thread hid 75 % of the communication [60, 88]; compute ran 5 % slower beside it; "
                        "the step took 1.08x its schedule bound; 1.43x faster than sequential [1.30, 1.50].")
    # 0 % with the interval [0, 0]: not resolved, as the console marks it (one rule: the interval holds 0)
    assert "nonblocking hid none of the communication [0, 0] (not resolved: the interval holds 0)" in text
    assert "overlapping made the step slower than sequential (12 against 10 ms: speedup 0.83x [0.80, 0.86])" in text
    assert "! nonblocking: efficiency below 0" in text
    assert "n.r. nonblocking: the share hidden is not resolved" in text and "~ comm: unstable" in text
    assert "share 64 cores" not in text


def test_an_interval_holding_zero_is_not_resolved(tmp_path):
    path = summary(tmp_path, [row("compute", 6.0), row("comm", 4.0), row("seq", 10.0),
                              row("thread", 9.5, 0, 1.05, 0.95, 1.15, 0.12, 12, 0, 30, 0.1)])
    text = "\n".join(verdict.verdict(path, cores=64))
    assert "thread hid 12 % of the communication [0, 30] (not resolved: the interval holds 0)" in text
    assert "no faster than sequential within its interval (1.05x [0.95, 1.15])" in text
    assert "n.r. thread: the share hidden is not resolved" in text


def test_ranks_crowding_the_cores_are_said(tmp_path):
    path = summary(tmp_path, [row("compute", 6.0), row("comm", 4.0), row("seq", 10.0),
                              row("thread", 9.0, 0, 1.1, 1.0, 1.2, 0.25, 25, 10, 40, 0.3)])
    (tmp_path / "phase3.meta.json").write_text('{"omp_threads": 1}')
    text = "\n".join(verdict.verdict(path, cores=2))
    assert "2 ranks with 2 threads each share 2 cores" in text


def test_a_planned_step_is_said_beside_its_prediction_and_a_gpu_run_is_not_crowded(tmp_path):
    """Phase 4 --plan auto: the planner's choice, its measured and predicted step and the error; phase 4 writes no
    device column, and its GPU ranks crowding this machine's cores is not said."""
    path = tmp_path / "p4.csv"
    path.write_text("system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max,plan,sync,"
                    "buckets,predicted_ms,speedup\n"
                    "overlap-bench,phase4,compute,4,0,8,50,50,50,50,auto,ce,14,,\n"
                    "overlap-bench,phase4,seq,4,0,8,75,75,75,75,auto,ce,14,,\n"
                    "overlap-bench,phase4,overlap,4,0,8,66.6,67,66,67,auto,ce,14,61.81,1.13\n"
                    "overlap-bench,phase4,overlap,4,0,8,70,70,70,70,caps,nccl,9,68,1.07\n")
    text = "\n".join(verdict.verdict(path, cores=2))
    assert "the planner's plan (--sync ce, 14 buckets): 66.6 ms measured against 61.81 ms predicted (error +7.7 %)" \
        in text
    assert text.count("the planner's plan") == 1 and "share 2 cores" not in text


def test_phase1_says_when_the_loss_diverged(tmp_path):
    path = tmp_path / "phase1.csv"
    path.write_text("system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max,variant,"
                    "kernel,gflops,first_loss,final_loss,diverged\n"
                    "overlap-bench,phase1,seq,1,1,5,1,1,1,1,cublas,iteration,900,0.2,3e38,1\n"
                    "overlap-bench,phase1,seq,1,1,5,1,1,1,1,naive,iteration,90,0.2,0.001,0\n")
    lines = verdict.verdict(path, cores=2)
    assert lines == ["phase1: cublas 900 GFLOP/s per step; its loss diverged (0.2 -> 3e+38).",
                     "phase1: naive 90 GFLOP/s per step; the loss fell from 0.2 to 0.001."]


def test_bad_invocation_of_verdict(tmp_path):
    result = subprocess.run([*tool("verdict.py"), str(tmp_path / "none")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    result = subprocess.run([*tool("verdict.py"), str(tmp_path), "--cores", "0"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--cores" in result.stderr


def test_one_rule_of_not_resolved_in_the_console_the_csv_and_the_verdict(tmp_path, phase2):
    """The binaries write `<metric>_resolved` by the rule their console marks n.r. with (common/metrics.cpp); the
    verdict reads it, and for summaries written before it applies the same closed interval. Checked on a run of
    today's binary and on every published summary."""

    import pandas as pd

    from overlap_bench.report import verdict

    result = subprocess.run([str(phase2), "--chunks", "4", "--compute-ms", "1", "--comm-ms", "1", "--jitter", "0.5",
                             "--iters", "4", "--warmup", "1", "--csv", str(tmp_path / "p.csv")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    row = pd.read_csv(tmp_path / "p.csv").set_index("mode").loc["overlap"].to_dict()
    lo, hi = row["overlap_pct_ci_lo"], row["overlap_pct_ci_hi"]
    assert row["overlap_pct_resolved"] == int(not (lo <= 0 <= hi))
    console = next(line for line in result.stdout.splitlines() if line.strip().startswith("overlap "))
    assert ("n.r." in console) == (not row["overlap_pct_resolved"] or not row["speedup_resolved"]
                                   or not row["overlap_efficiency_resolved"])
    checked = 0
    for path in packs.rglob(REPO / "results", "*.csv"):  # packed ones too
        try:
            frame = packs.read_csv(path)
        except Exception:  # noqa: BLE001 - not every CSV is a summary
            continue
        if not {"overlap_pct", "overlap_pct_ci_lo", "overlap_pct_ci_hi", "mode"} <= set(frame.columns):
            continue
        for record in frame.to_dict("records"):
            lo, hi = record["overlap_pct_ci_lo"], record["overlap_pct_ci_hi"]
            if lo == lo and hi == hi:
                assert verdict.resolved(record, "overlap_pct") == (not (lo <= 0 <= hi)), (path, record["mode"])
                checked += 1
    assert checked > 100, checked


def test_ranks_sharing_a_gpu_are_said_and_a_gpu_each_is_not(tmp_path):
    """phase3 --share-gpu (issue 84): its ranks_per_gpu column above 1 is said in words; 1 (a GPU per rank) is not."""
    rows = [row("compute", 6.0), row("comm", 4.0), row("seq", 10.0),
            row("thread", 9.0, 0, 1.1, 1.0, 1.2, 0.25, 25, 10, 40, 0.3)]
    for share, said in ((2, True), (1, False)):
        path = summary(tmp_path, rows, name=f"phase3-{share}.csv")
        text = path.read_text().splitlines()
        path.write_text("\n".join([text[0] + ",ranks_per_gpu"] + [line + f",{share}" for line in text[1:]]) + "\n")
        lines = verdict.verdict(path, cores=64)
        assert any("2 ranks time-slice one GPU's compute (--share-gpu)" in line for line in lines) == said, lines
