"""The planner's predictions checked against measured steps (overlap_bench/planner/check_prediction.py): per
overlapped row the step phase4_predict gives for its rank count and plan, on the calibrated link or, for a slower
transport or emulated nodes, over the link fitted from that layout's comm-only sweep; bad inputs exit 2 naming them;
and the figure of predicted against measured (overlap_bench/report/plot_predictions.py)."""
import io
import subprocess

import pandas as pd
import pytest

from conftest import tool
from test_predict import MIB, calibration, predict


def test_check_prediction_compares_measured_steps_with_the_calibrations_prediction(predictor, tmp_path):
    """check_prediction.py: each overlapped row of a run on more ranks beside what the 2-rank calibration of its
    model predicts for that rank count and plan (its caps, or the best plan for plan auto), and the error;
    chunked plans are left out and said so; a model no calibration holds exits 2 naming it."""
    cal = calibration(tmp_path)
    base = dict(system="overlap-bench", phase="phase4", ranks=4, chunks=0, iters=20, time_ms_p95=9.0,
                time_ms_min=5.0, time_ms_max=9.0, hidden=1024, layers=4, batch=256, first_bucket_mb=1.0)
    rows = [dict(base, mode="compute", plan="caps", sync="nccl", bucket_mb=4.0, time_ms_p50=5.0),
            dict(base, mode="overlap", plan="caps", sync="nccl", bucket_mb=4.0, time_ms_p50=7.0),
            dict(base, mode="overlap", plan="auto", sync="nccl", bucket_mb=None, time_ms_p50=6.0),
            dict(base, mode="overlap", plan="caps", sync="nccl", bucket_mb=None, chunks=4, time_ms_p50=6.5)]
    measured = tmp_path / "run4.csv"
    pd.DataFrame(rows).to_csv(measured, index=False)
    out = tmp_path / "check.csv"
    command = [*tool("check_prediction.py"), "--calibrations", str(cal),
               "--measured", str(measured), "--csv", str(out), "--predictor", str(predictor)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "2 rows in" in result.stdout and "1 rows of chunked plans left out" in result.stdout
    table = pd.read_csv(out).set_index("plan")
    given, best = tmp_path / "given.csv", tmp_path / "best.csv"
    assert predict(predictor, cal, "--csv", given, "--ranks", "4", "--sync", "nccl", "--bucket-mb", "4").returncode == 0
    assert predict(predictor, cal, "--csv", best, "--ranks", "4").returncode == 0
    assert table.loc["caps", "predicted_ms"] == pytest.approx(pd.read_csv(given)["predicted_ms"][0])
    assert table.loc["auto", "predicted_ms"] == pytest.approx(pd.read_csv(best)["predicted_ms"][0])
    assert table.loc["caps", "error"] == pytest.approx(7.0 / table.loc["caps", "predicted_ms"] - 1)
    assert (table["calibrated_ranks"] == 2).all() and (table["ranks"] == 4).all()
    pd.DataFrame(rows).assign(hidden=512).to_csv(measured, index=False)
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "no calibration of H=512 L=4 B=256" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_check_prediction_names_text_in_a_numeric_column(predictor, tmp_path):
    measured = tmp_path / "m.csv"
    measured.write_text("system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max,hidden,"
                        "layers,batch,bucket_mb,first_bucket_mb\n"
                        "overlap-bench,phase4,overlap,4,0,5,9,9,9,9,1024,4,256,lots,1\n")
    result = subprocess.run([*tool("check_prediction.py"), "--calibrations",
                             str(calibration(tmp_path)), "--measured", str(measured), "--csv", str(tmp_path / "c.csv"),
                             "--predictor", str(predictor)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "column 'bucket_mb', row" in result.stderr and "'lots'" in result.stderr
    assert "Traceback" not in result.stderr


# (ranks, the layout's columns, the sweep's step per bucket count, the link expected, --gpus-per-node, the refusal)
LAYOUTS = {
    # --transport shm on 2 ranks: 256 MiB in 10 ms, 30 us a bucket; every two ranks joined by that link.
    "shm": (2, "shm", lambda b: b * 0.03 + 10, "shm:26.84:30", "1", "a run on --transport shm, and no --links-from"),
    # 4 ranks on 2 emulated nodes: 256 MiB in 20 ms (13.42 GB/s, 20.13 on a 4-rank ring's links), 90 us a bucket (45
    # per hop of phase4_predict's log2(4) across a link, not a ring's 3: 30 put a third of it back); 2 GPUs a node
    # over the calibration's own link.
    "2nodes": (4, "nvlink,2", lambda b: b * 0.09 + 20, "nvlink-2nodes:20.13:45", "2",
               "over 2 emulated nodes, and no --links-from sweep on it"),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_check_prediction_on_a_slower_link_or_across_nodes_is_given_that_layout_s_fit(predictor, tmp_path, layout):
    """A run on --transport shm, or over 2 emulated nodes (`nodes` 2): its prediction is the NVLink calibration over a
    link fitted from the comm-only sweep of the same layout (step = buckets * alpha + bytes / beta, taken apart as
    phase4_predict puts a link together); such a run with no sweep, a sweep of another layout, or a summary without
    comm rows exits 2."""
    ranks, columns, step_ms, link, per_node, refused = LAYOUTS[layout]
    named = "transport" if "," not in columns else "transport,nodes"
    cal = calibration(tmp_path)
    head = "system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max,"
    sweep = tmp_path / "comm.csv"
    sweep.write_text(head + f"hidden,layers,batch,bucket_mb,first_bucket_mb,buckets,grad_mb,{named}\n" + "".join(
        f"overlap-bench,phase4,comm,{ranks},0,10,{step_ms(b)},1,1,1,4096,4,8,{mb},1,{b},256,{columns}\n"
        for mb, b in [(1, 256), (16, 17), (64, 5), (256, 2)]))
    measured = tmp_path / "step.csv"
    measured.write_text(head + f"hidden,layers,batch,bucket_mb,first_bucket_mb,plan,sync,{named}\n"
                        f"overlap-bench,phase4,overlap,{ranks},0,20,30,1,1,1,1024,4,256,4,1,caps,nccl,{columns}\n")
    out = tmp_path / "check.csv"
    command = [*tool("check_prediction.py"), "--calibrations", str(cal),
               "--measured", str(measured), "--csv", str(out), "--predictor", str(predictor)]
    result = subprocess.run(command + ["--links-from", str(sweep)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    row = pd.read_csv(out).iloc[0]
    assert row["link"] == link, row["link"]
    alone = tmp_path / "alone.csv"
    assert predict(predictor, cal, "--csv", alone, "--ranks", str(ranks), "--gpus-per-node", per_node, "--links",
                   link, "--sync", "nccl", "--bucket-mb", "4").returncode == 0
    assert row["predicted_ms"] == pytest.approx(pd.read_csv(alone)["predicted_ms"][0])
    other = tmp_path / "other.csv"  # the same sweep on the calibration's own layout
    other.write_text(sweep.read_text().replace(f",{columns}\n", ",nvlink" + (",1" if "," in columns else "") + "\n"))
    for extra, words in (([], refused), (["--links-from", str(other)], refused),
                         (["--links-from", str(measured)], "--links-from: '")):
        bad = subprocess.run(command + extra, capture_output=True, text=True, timeout=120)
        assert bad.returncode == 2 and words in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_the_predictions_figure_counts_the_points_in_the_band(tmp_path):
    """plot_predictions.py: one point per row of each check, the count within +-10 % printed; a check without the
    two columns, a time that is not one, or a name short exit 2 with nothing written."""
    check = tmp_path / "check.csv"
    check.write_text("config,label,predicted_ms,measured_ms\na,x,10,10.5\na,y,10,12\nb,x,5,4.6\n")
    emulated = tmp_path / "emulated.csv"
    emulated.write_text("nodes,predicted_ms,measured_ms\n2,40,39\n")
    script = [*tool("plot_predictions.py")]
    png = tmp_path / "p.png"
    result = subprocess.run(script + [str(check), str(emulated), "--names", "one node", "two nodes", "-o", str(png)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "4 predictions, 3 within +-10%" in result.stdout and png.stat().st_size > 10000
    # --csv: per name (checks of one name are one set) and over all, the points in the band, mean and worst |error|
    summary = tmp_path / "summary.csv"
    again = tmp_path / "check-again.csv"  # a second check of the same name (the same file twice is refused)
    again.write_text(check.read_text())
    result = subprocess.run(script + [str(check), str(again), str(emulated), "--names", "one", "one", "two", "-o",
                                      str(tmp_path / "q.png"), "--csv", str(summary)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(summary).set_index("name")
    assert list(table.index) == ["one", "two", "all"] and list(table["points"]) == [6, 1, 7]
    assert list(table["within_band"]) == [4, 1, 5]
    assert table.loc["one", "worst_abs_error"] == pytest.approx(0.2)
    assert table.loc["all", "mean_abs_error"] == pytest.approx((2 * (0.05 + 0.2 + 0.08) + 1 / 40) / 7)
    bad = tmp_path / "bad.csv"
    for text, names in (("a,b\n1,2\n", ["x"]), ("predicted_ms,measured_ms\n-1,2\n", ["x"]),
                        ("predicted_ms,measured_ms\nten,2\n", ["x"]), ("predicted_ms,measured_ms\n1,2\n", [])):
        bad.write_text(text)
        out = tmp_path / "bad.png"
        result = subprocess.run(script + [str(bad), "--names", *names, "-o", str(out)] if names else
                                script + [str(bad), str(check), "--names", "x", "-o", str(out)],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and not out.exists()


def test_bucket_times_measured_on_the_target_ranks_replace_the_scaled_ones(predictor, tmp_path):
    """--comm-from: a comm-only sweep on the measured runs' ranks (one strategy, one node) gives each size's time per
    bucket, (step - first bucket) * size / (gradient - first bucket), the first from the sweep of its own size; the
    prediction is phase4_predict's with those times (--comm) instead of the calibration's scaled to 4 ranks; a sweep
    of a strategy no calibration holds, of two strategies or without the first bucket's size exits 2."""
    from overlap_bench.planner import check_prediction

    cal = calibration(tmp_path)
    head = "system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max,"
    sweep = tmp_path / "comm4.csv"  # 16 MiB on 4 ranks: 16 buckets of 1 MiB in 1.6 ms, 1 + 15 in 1.2, 1 + 1 in 0.9
    sweep.write_text(head + "hidden,layers,batch,bucket_mb,first_bucket_mb,buckets,grad_mb,sync\n" + "".join(
        f"overlap-bench,phase4,comm,4,0,10,{ms},1,1,1,1024,4,256,{mb},1,{b},16,nccl\n"
        for mb, b, ms in [(1, 16, 1.6), (4, 5, 1.2), (16, 2, 0.9)]))
    sync, ranks, text = check_prediction.comm_table_of(sweep)
    assert (sync, ranks) == ("nccl", 4) and text == "nccl@4:1=0.1,4=0.293333,16=0.853333", text
    measured = tmp_path / "step.csv"
    measured.write_text(head + "hidden,layers,batch,bucket_mb,first_bucket_mb,plan,sync\n"
                        "overlap-bench,phase4,overlap,4,0,20,7,1,1,1,1024,4,256,4,1,caps,nccl\n")
    out = tmp_path / "check.csv"
    command = [*tool("check_prediction.py"), "--calibrations", str(cal), "--measured", str(measured), "--csv",
               str(out), "--predictor", str(predictor)]
    assert subprocess.run(command, capture_output=True, text=True, timeout=120).returncode == 0
    scaled = pd.read_csv(out)["predicted_ms"][0]
    result = subprocess.run(command + ["--comm-from", str(sweep)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    given = subprocess.run([str(predictor), "--calibration", str(cal), "--ranks", "4", "--sync", "nccl", "--bucket-mb",
                            "4", "--comm", text], capture_output=True, text=True, timeout=60)
    assert given.returncode == 0, given.stderr
    with_comm = pd.read_csv(out)["predicted_ms"][0]
    assert with_comm == pytest.approx(float(given.stdout.splitlines()[1].split(",")[4]), rel=1e-5)
    assert with_comm != pytest.approx(scaled, rel=1e-3)  # the measured times, not the scaled ones
    lines = sweep.read_text().splitlines(keepends=True)
    for bad_text, words in (("".join(lines).replace(",nccl\n", ",sharded-ce\n"), "no calibration holds its strategy"),
                            ("".join(lines).replace(",nccl\n", ",ce\n", 1), "a comm-only sweep over bucket sizes"),
                            ("".join(lines[:1] + lines[2:]), "--first-bucket-mb among its sizes")):
        bad = tmp_path / "bad.csv"
        bad.write_text(bad_text)
        result = subprocess.run(command + ["--comm-from", str(bad)], capture_output=True, text=True, timeout=120)
        assert result.returncode == 2 and words in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_phase4_predict_refuses_measured_times_it_cannot_use(predictor, tmp_path):
    """--comm: a strategy the calibration lacks, a sharded one, one size, sizes out of order or a bad rank count."""
    cal = calibration(tmp_path)
    for text, words in (("ce@4:1=0.1,4=0.2", "a strategy the calibration holds"),
                        ("sharded@4:1=0.1,4=0.2", "calibrated per layer"), ("nccl@4:1=0.1", "two sizes or more"),
                        ("nccl@4:4=0.1,1=0.2", "increasing order"), ("nccl@1:1=0.1,4=0.2", "ranks >= 2"),
                        ("nccl@4:1=0,4=0.2", "times > 0")):
        result = subprocess.run([str(predictor), "--calibration", str(cal), "--ranks", "4", "--comm", text],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 2 and f"--comm: '{text}' is invalid" in result.stderr and words in result.stderr


def test_a_sharded_strategy_rises_with_the_ranks_as_its_all_reduce_twin_measured_there(predictor, tmp_path):
    """phase4_predict --comm nccl@4: sharded (scales_as nccl) takes nccl's measured / calibrated time at each size:
    times 1.5, the ring's share from 2 ranks to 4 for lines through zero, the same step as scaled without --comm;
    times 1, less; comm_measured names the strategy whose times a row took."""
    nccl = {"sync": "nccl", "bytes": [4 * MIB, 16 * MIB], "comm_ms": [0.8, 3.2], "stretch": [1.1, 1.1],
            "slowdown": [0.1, 0.1]}
    layers = [0.5, 0.5, 0.5, 0.5]
    sharded = dict(nccl, sync="sharded", comm_ms=[0.4, 1.6], sharded={
        "prefetch": 0, "forward_rest_ms": 0.01, "iteration_ms": 5.0, "gather_stretch": 1.0, "forward_slowdown": 0.0,
        "layer_ms": layers, "update_ms": [0.05] * 4, "gather_ms": [0.4] * 4, "step_ms": [1.0] * 4})
    cal = calibration(tmp_path, strategies=[nccl, sharded])

    def step(*comm):
        done = subprocess.run([str(predictor), "--calibration", str(cal), "--ranks", "4", "--sync", "sharded",
                               "--bucket-mb", "4", *comm], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        row = pd.read_csv(io.StringIO(done.stdout), keep_default_na=False).iloc[0]
        return row["predicted_ms"], row["comm_measured"]

    scaled, used = step()
    assert used == ""
    ring, used = step("--comm", "nccl@4:4=1.2,16=4.8")
    assert ring == pytest.approx(scaled, rel=1e-4) and used == "nccl"
    flat, _ = step("--comm", "nccl@4:4=0.8,16=3.2")
    assert flat < scaled * 0.97
