"""The plotting and report scripts on CSVs written by the real binaries (phases 2 and 3) and on hand-made edge
cases (the drivers and every script's --help: test_drivers.py)."""
import os
import shutil
import struct
import subprocess

import pandas as pd
import pytest

from conftest import run, script
from overlap_bench.core import figures
from overlap_bench.core import ob_csv
from overlap_bench.report import plot_gantt
from overlap_bench.report import plot_interference
from overlap_bench.report import plot_topology
from overlap_bench.report import report

def png_size(path):
    """(width, height) of a PNG, asserting its signature."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def real_csvs(phase2, build_dir, tmp_path_factory):
    """Summary and timeline CSVs of phase 2 (synthetic, real) and phase 3 (2 ranks) written in this test run."""
    out = tmp_path_factory.mktemp("real")
    for workload in ("synthetic", "real"):
        result = run(phase2, "--workload", workload, "--iters", "3", "--warmup", "1", "--chunks", "5",
                     "--compute-ms", "2", "--comm-ms", "1", "--chunk-rows", "8", "--hidden", "32", "--check",
                     "--csv", out / f"phase2-{workload}.csv")
        assert result.returncode == 0, result.stderr
    phase3 = build_dir / "phase3_mpi_cuda" / "phase3_mpi_cuda"
    if shutil.which("mpirun") and phase3.exists():
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="2")
        result = subprocess.run(["mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none", str(phase3),
                                 "--device", "cpu", "--iters", "3", "--batch", "64", "--in", "32", "--out", "16",
                                 "--csv", str(out / "phase3.csv")], capture_output=True, text=True, env=env,
                                timeout=300)
        assert result.returncode == 0, result.stderr
    return out


def test_every_plot_on_real_csvs(real_csvs, tmp_path):
    for name in ("phase2-synthetic", "phase2-real", "phase3"):
        summary, timeline = real_csvs / f"{name}.csv", real_csvs / f"{name}.timeline.csv"
        if not summary.exists():
            continue
        for tool, args in (("plot_summary.py", [summary]), ("plot_gantt.py", [timeline, "--iter", "0,1"]),
                           ("plot_chunks.py", [timeline])):
            output = tmp_path / f"{name}-{tool}.png"
            result = script(tool, *args, "-o", output)
            assert result.returncode == 0, result.stderr
            width, height = png_size(output)
            assert width >= 600 and height >= 200


def test_report_lists_every_figure(real_csvs):
    result = script("report.py", real_csvs)
    assert result.returncode == 0, result.stderr
    report = (real_csvs / "report.md").read_text()
    figures = sorted(p.name for p in (real_csvs / "figures").glob("*.png"))
    assert len(figures) >= 6
    for figure in figures:
        assert f"figures/{figure}" in report
    assert "| mode | time_ms_p50 |" in report and "overlap_efficiency" in report


def test_scaling_on_a_chunk_sweep(phase2, tmp_path):
    frames = []
    for chunks in (1, 2, 5, 10):
        csv = tmp_path / f"c{chunks}.csv"
        assert run(phase2, "--chunks", chunks, "--compute-ms", "1", "--comm-ms", "1", "--iters", "2", "--warmup", "0",
                   "--csv", csv).returncode == 0
        frames.append(pd.read_csv(csv))
    sweep = tmp_path / "sweep.csv"
    pd.concat(frames).to_csv(sweep, index=False)
    output = tmp_path / "scaling.png"
    result = script("plot_scaling.py", sweep, "--x", "chunks", "-o", output)
    assert result.returncode == 0, result.stderr
    assert png_size(output)[0] >= 600
    # Against a parameter that never varies: a clear error.
    result = script("plot_scaling.py", tmp_path / "c1.csv", "--x", "chunks", "-o", output)
    assert result.returncode == 2 and "only one value" in result.stderr


def hand_timeline(path, ranks, chunks, iters=2):
    rows = []
    for r in range(ranks):
        for it in range(iters):
            for c in range(chunks):
                t = 1000.0 * (it * chunks + c)
                rows.append((r, "overlap:compute", "compute", it, c, t, t + 800))
                rows.append((r, "overlap:comm", "comm", it, c, t + 800, t + 1500))
    pd.DataFrame(rows, columns=ob_csv.TIMELINE_COLUMNS).to_csv(path, index=False)


@pytest.mark.parametrize("ranks,chunks", [(1, 1), (4, 3), (2, 50)])
def test_gantt_and_chunks_on_hand_made_timelines(tmp_path, ranks, chunks):
    timeline = tmp_path / "t.csv"
    hand_timeline(timeline, ranks, chunks)
    for tool in ("plot_gantt.py", "plot_chunks.py"):
        output = tmp_path / f"{tool}.png"
        result = script(tool, timeline, "-o", output)
        assert result.returncode == 0, result.stderr
        png_size(output)


def test_gantt_of_a_sweep_draws_one_point_and_the_report_says_which(tmp_path):
    timeline = tmp_path / "sweep.timeline.csv"
    hand_timeline(timeline, 2, 4)
    frame = pd.read_csv(timeline)
    second = frame.assign(point="bucket_mb=64", start_us=frame["start_us"] + 1e6, end_us=frame["end_us"] + 1e6)
    pd.concat([frame.assign(point="bucket_mb=25"), second]).to_csv(timeline, index=False)
    loaded = ob_csv.load_timeline(timeline)
    assert ob_csv.timeline_points(loaded) == ["bucket_mb=25", "bucket_mb=64"]
    assert set(plot_gantt.select(loaded, [], [], [])["point"]) == {"bucket_mb=25"}  # the first by default
    assert set(plot_gantt.select(loaded, [], [], [], "bucket_mb=64")["start_us"]) == set(second["start_us"])
    assert script("plot_gantt.py", timeline, "--point", "bucket_mb=64", "-o", tmp_path / "g.png").returncode == 0
    wrong = script("plot_gantt.py", timeline, "--point", "bucket_mb=1", "-o", tmp_path / "x.png")
    assert wrong.returncode == 2 and "--point 'bucket_mb=1' is not in this timeline" in wrong.stderr
    lines = report.timeline_section(timeline, tmp_path)
    assert "A sweep of 2 points; drawn: bucket_mb=25 (`plot_gantt.py --point` draws another)." in lines


def interference_csv(path):
    """A hand-made --mode interference summary: two strategies, three sizes, one point not covered."""
    rows = []
    for sync, slowdown in (("nccl", 0.3), ("ce", 0.02)):
        for mb in (1, 4, 16):
            rows.append(dict(system="overlap-bench", phase="phase4", mode="interference", ranks=2, chunks=0, iters=3,
                             time_ms_p50=1 + slowdown, time_ms_p95=1.1 + slowdown, time_ms_min=1, time_ms_max=2,
                             hidden=4096, layers=16, batch=512, sync=sync, nccl_max_ctas=0, msg_mb=mb, gemm_ms=1.0,
                             gemm_overlap_ms=1 + slowdown, compute_slowdown=slowdown, comm_ms=0.05 * mb,
                             comm_overlap_ms=0.06 * mb, comm_stretch=1.2, busbw_GBps=200, covered=int(mb != 16)))
    pd.DataFrame(rows).to_csv(path, index=False)


def test_interference_map_figure_and_report(tmp_path):
    summary = tmp_path / "map.csv"
    interference_csv(summary)
    labelled = plot_interference.rows(ob_csv.load_summary(summary))
    assert list(labelled["line"].unique()) == ["nccl", "ce"]  # one line per strategy
    result = script("plot_interference.py", summary, "-o", tmp_path / "map.png")
    assert result.returncode == 0, result.stderr
    width, height = png_size(tmp_path / "map.png")
    assert width > height > 300
    report_md = report.write_report(tmp_path).read_text()
    assert "map.interference.png" in report_md and "| msg_mb | gemm_ms |" in report_md
    assert "map.bars.png" not in report_md
    other = tmp_path / "other.csv"
    pd.read_csv(summary).assign(mode="overlap").to_csv(other, index=False)
    result = script("plot_interference.py", other, "-o", tmp_path / "x.png")
    assert result.returncode == 2 and "no interference rows" in result.stderr


def test_one_event_timeline(tmp_path):
    timeline = tmp_path / "one.csv"
    pd.DataFrame([(0, "seq:thread 0", "compute", 0, -1, 0.0, 5.0)], columns=ob_csv.TIMELINE_COLUMNS).to_csv(
        timeline, index=False)
    assert script("plot_gantt.py", timeline, "-o", tmp_path / "g.png").returncode == 0
    result = script("plot_chunks.py", timeline, "-o", tmp_path / "c.png")  # no per-chunk events
    assert result.returncode == 2 and "no per-chunk events" in result.stderr


@pytest.mark.parametrize("content,message", [
    ("", "empty file"),
    ("rank,lane,name,iter,chunk,start_us\n0,a,b,0,0,1\n", "missing required column 'end_us'"),
    (",".join(ob_csv.TIMELINE_COLUMNS) + "\n", "no rows"),
])
def test_loader_errors_name_the_file_and_column(tmp_path, content, message):
    bad = tmp_path / "bad.csv"
    bad.write_text(content)
    result = script("plot_gantt.py", bad, "-o", tmp_path / "x.png")
    assert result.returncode == 2
    assert str(bad) in result.stderr and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.png").exists()


def test_summary_missing_column_and_report_of_nothing(tmp_path):
    bad = tmp_path / "s.csv"
    bad.write_text("system,phase,mode\nx,y,z\n")
    result = script("plot_summary.py", bad, "-o", tmp_path / "x.png")
    assert result.returncode == 2 and "missing required column 'ranks'" in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = script("report.py", empty)
    assert result.returncode == 2 and "no overlap-bench CSV" in result.stderr


def test_power_plot_with_overlapped_spans_shaded(tmp_path):
    power = tmp_path / "power.csv"
    rows = [(r, r, t * 20000.0, 300 + 100 * (t % 5) + r) for r in range(2) for t in range(50)]
    pd.DataFrame(rows, columns=ob_csv.POWER_COLUMNS).to_csv(power, index=False)
    timeline = tmp_path / "t.csv"
    hand_timeline(timeline, 2, 4)
    output = tmp_path / "power.png"
    result = script("plot_power.py", power, "--timeline", timeline, "-o", output)
    assert result.returncode == 0, result.stderr
    assert png_size(output)[0] >= 600
    from overlap_bench.report import plot_power
    assert plot_power.mode_spans(ob_csv.load_timeline(timeline), "overlap") == [(0.0, 4.5), (4.0, 8.5)]
    bad = tmp_path / "bad.csv"
    bad.write_text("rank,gpu,t_us\n0,0,1\n")
    result = script("plot_power.py", bad, "-o", output)
    assert result.returncode == 2 and "missing required column 'power_w'" in result.stderr


def test_report_draws_power_csvs(real_csvs):
    rows = [(0, 0, t * 1000.0, 250.0 + t) for t in range(20)]
    pd.DataFrame(rows, columns=ob_csv.POWER_COLUMNS).to_csv(real_csvs / "phase4.power.csv", index=False)
    result = script("report.py", real_csvs)
    assert result.returncode == 0, result.stderr
    assert "figures/phase4.power.png" in (real_csvs / "report.md").read_text()
    png_size(real_csvs / "figures" / "phase4.power.png")


def test_figures_name_their_hardware_and_keep_colours(tmp_path):
    """Figures stand alone: the title line names ranks x GPU (or the CPU) and the commit; a mode and a task have one
    colour in every figure; a folder with phase 4 and DDP summaries of separate processes gets no ratio between them
    (only ob-compare's interleaved rounds make one)."""
    meta = {"ranks": 2, "commit": "abc123", "gpus": [{"gpu_name": "NVIDIA H200"}, {"gpu_name": "NVIDIA H200"}],
            "hosts": ["a", "b"]}
    assert ob_csv.hardware_line(meta) == "2 x NVIDIA H200, 2 hosts, commit abc123"
    cpu = {"ranks": 1, "commit": "c", "cpu_model": "AMD EPYC"}
    assert ob_csv.hardware_line(cpu) == "1 rank(s) on AMD EPYC, commit c"
    assert figures.colour("overlap", figures.MODE_COLOURS) == figures.MODE_COLOURS["overlap"]
    new_task = figures.colour("some_new_task", figures.TASK_COLOURS)
    assert new_task == figures.colour("some_new_task", figures.TASK_COLOURS)
    time_columns = [c for c in ob_csv.SUMMARY_COLUMNS if c.startswith("time_ms")]
    header = "system,phase,mode,ranks,chunks,iters," + ",".join(time_columns) + ",hidden,layers,batch"
    times = lambda ms: ",".join([str(ms)] * len(time_columns))  # noqa: E731
    ours = [f"overlap-bench,phase4,{m},2,0,20,{times(ms)},4096,16,512" for m, ms in
            (("compute", 4.0), ("comm", 5.0), ("seq", 9.0), ("overlap", 6.0))]
    ddp = [f"pytorch-ddp,phase4,{m},2,0,20,{times(ms)},4096,16,512" for m, ms in
           (("compute", 4.0), ("comm", 5.0), ("seq", 9.0), ("overlap", 7.5), ("overlap", 8.0))]
    (tmp_path / "phase4-a.csv").write_text(header + "\n" + "\n".join(ours) + "\n")
    (tmp_path / "ddp.csv").write_text(header + "\n" + "\n".join(ddp) + "\n")
    result = script("report.py", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "phase4-over-ddp" not in (tmp_path / "report.md").read_text()
    assert "prediction_error" not in (tmp_path / "report.md").read_text()  # no planner rows, no such column
    # a planner's rows: predicted_ms beside the measured step, and their error (measured / predicted - 1)
    planned = pd.read_csv(tmp_path / "phase4-a.csv").assign(predicted_ms=[None, None, None, 5.0])
    planned.to_csv(tmp_path / "phase4-a.csv", index=False)
    report_md = report.write_report(tmp_path).read_text()
    assert "| predicted_ms | prediction_error |" in report_md and "| 5 | 0.2 |" in report_md
    assert not (tmp_path / "figures" / "phase4-over-ddp.png").exists()


def test_plot_topology_draws_each_configuration_against_the_fitted_link(tmp_path):
    """plot_topology.py: the steps of one configuration on three transports against each transport's bandwidth fitted
    from its comm-only sweep; a run on a transport with no sweep, or a sweep of one bucket count, exits 2."""
    head = "system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max,"
    sweeps, steps = [], []
    for transport, alpha, seconds, overlap in (("nvlink", 0.015, 0.001, 9.0), ("shm", 0.03, 0.01, 44.0),
                                               ("socket", 0.2, 0.1, 540.0)):
        sweep = tmp_path / f"comm-{transport}.csv"
        sweep.write_text(head + "hidden,layers,batch,buckets,grad_mb,transport\n" + "".join(
            f"overlap-bench,phase4,comm,2,0,10,{b * alpha + 1000 * seconds},1,1,1,4096,4,8,{b},256,{transport}\n"
            for b in (256, 17, 5, 2)))
        step = tmp_path / f"step-{transport}.csv"
        step.write_text(head + "hidden,layers,batch,transport,overlap_pct\n"
                        f"overlap-bench,phase4,compute,2,0,20,5,1,1,1,4096,16,512,{transport},\n"
                        f"overlap-bench,phase4,overlap,2,0,20,{overlap},1,1,1,4096,16,512,{transport},10\n")
        sweeps.append(str(sweep)), steps.append(str(step))
    output = tmp_path / "topology.png"
    result = script("plot_topology.py", *steps, "--links-from", *sweeps, "-o", output)
    assert result.returncode == 0, result.stderr
    assert output.stat().st_size > 10000
    points = plot_topology.points(steps, plot_topology.bandwidths(sweeps))
    assert [round(bw, 1) for bw, *_ in points["4096,16,512"]] == [2.7, 26.8, 268.4]  # 256 MiB in 100, 10, 1 ms
    assert [round(r, 1) for _, r, *_ in points["4096,16,512"]] == [108.0, 8.8, 1.8]
    for args, words in (([steps[1], "--links-from", sweeps[0]], "no --links-from sweep on it"),
                        ([steps[0], "--links-from", steps[0]], "--links-from: '")):
        bad = script("plot_topology.py", *args, "-o", tmp_path / "x.png")
        assert bad.returncode == 2 and words in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
        assert not (tmp_path / "x.png").exists()
