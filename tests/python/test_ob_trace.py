"""ob_trace: a timeline CSV's Chrome trace by the binaries' own writer, so older runs' traces can be remade."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import built

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="2")


@pytest.fixture(scope="module")
def ob_trace(build_dir):
    return built(build_dir, "common/ob_trace")


def run(*command, cwd=None):
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, cwd=cwd, env=ENV, timeout=300)


def test_remakes_the_trace_a_sweep_wrote(ob_trace, phase3, tmp_path):
    """The trace ob_trace makes from a phase 3 sweep's timeline is the one the binary wrote (times to the CSV's 12
    digits), point processes and flow arrows included."""
    result = run(shutil.which("mpirun"), "-np", "2", "--oversubscribe", "--bind-to", "none", phase3, "--compute",
                 "busy", "--grad-mb", "0.25,1", "--in", "256", "--chunks", "4", "--iters", "3", "--warmup", "1",
                 "--csv", tmp_path / "s.csv")
    assert result.returncode == 0, result.stderr
    made = run(ob_trace, tmp_path / "s.timeline.csv", "-o", tmp_path / "again.json")
    assert made.returncode == 0, made.stderr
    assert made.stderr.startswith("ob_trace: wrote ")
    want = json.loads((tmp_path / "s.timeline.trace.json").read_text())["traceEvents"]
    got = json.loads((tmp_path / "again.json").read_text())["traceEvents"]
    assert len(got) == len(want) > 0
    for a, b in zip(want, got):
        def untimed(event):
            return {k: v for k, v in event.items() if k not in ("ts", "dur")}
        assert untimed(a) == untimed(b)
        for key in ("ts", "dur"):
            assert abs(a.get(key, 0) - b.get(key, 0)) < 1e-3
    assert any(e["ph"] == "s" for e in got) and any(e["name"] == "process_name" and "grad_mb=1" in e["args"]["name"]
                                                    for e in got)
    # Without -o the trace goes beside the timeline, as the binaries put it.
    (tmp_path / "s.timeline.trace.json").unlink()
    assert run(ob_trace, tmp_path / "s.timeline.csv").returncode == 0
    assert (tmp_path / "s.timeline.trace.json").exists()


def test_power_samples_become_a_counter_track(ob_trace, tmp_path):
    timeline = tmp_path / "t.timeline.csv"
    timeline.write_text("rank,lane,name,iter,chunk,start_us,end_us\n0,overlap:compute,backward,0,1,0,10\n")
    power = tmp_path / "t.power.csv"
    power.write_text("rank,gpu,t_us,power_w\n0,0,5,300\n0,0,25,450\n")
    assert run(ob_trace, timeline, "--power", power, "-o", tmp_path / "t.json").returncode == 0
    counters = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e["ph"] == "C"]
    assert [c["args"]["gpu 0"] for c in counters] == [300, 450]


@pytest.mark.parametrize("content,named", [
    (None, "no such file"), ("", "no header line"), ("rank,lane\n0,a\n", "no column 'name'"),
    ("rank,lane,name,iter,chunk,start_us,end_us\n0,a,b,0,-1,x,2\n", "row 2, column 'start_us'"),
    ("rank,lane,name,iter,chunk,start_us,end_us\n0,\"a,b,0\n", "does not end"),
    ("rank,lane,name,iter,chunk,start_us,end_us\n0,a,b,0,0,10,5\n", "end_us 5 is before start_us 10"),
    ("rank,lane,name,iter,chunk,start_us,end_us\n1e20,a,b,0,0,1,5\n", "column 'rank': '1e20' is not a whole number"),
    ("rank,lane,name,iter,chunk,start_us,end_us\n0,a,b,1e308,0,1,5\n", "column 'iter': '1e308' is not a whole"),
    ("rank,lane,name,iter,chunk,start_us,end_us\n0,a,b,0.5,0,1,5\n", "column 'iter': '0.5' is not a whole")])
def test_bad_timelines_exit_2_with_one_line_and_write_nothing(ob_trace, tmp_path, content, named):
    timeline = tmp_path / "bad.csv"
    if content is not None:
        timeline.write_text(content)
    result = run(ob_trace, timeline, "-o", tmp_path / "out.json")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ob_trace: error: timeline:") and named in lines[0]
    assert not (tmp_path / "out.json").exists()
