"""What a failed run leaves (issue 17, class 8): a failed check writes nothing and exits 1, naming the element, the
value got and the value expected; the console still shows the table. Proven end to end with an injected corruption
of what phase 3's exact comm check reads (--inject-fault RANK:STEP:corrupt); a corruption no check reads is a
usage error."""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import time

import pytest

from conftest import tool

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
# With --check, --iters 2, --warmup 0: steps 0-8 are the three strategies' reference checks, 9-10 compute-only,
# 11-12 comm-only, then seq, thread, nonblocking.
SMALL = ["--device", "cpu", "--check", "--iters", "2", "--warmup", "0", "--batch", "64", "--in", "32", "--out", "16",
         "-q"]



def run2(binary, *args):
    command = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "2", binary, *SMALL, *args]
    return subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=120)


@pytest.mark.parametrize("rank", [0, 1])
def test_a_failed_check_writes_nothing_and_exits_1(phase3, tmp_path, rank):
    result = run2(phase3, "--csv", tmp_path / "x.csv", "--inject-fault", f"{rank}:11:corrupt")
    assert result.returncode == 1, result.stderr
    assert "comm: 1 elements of the all-reduced pattern are wrong" in result.stderr
    assert f"rank {rank}: iteration 0, index 256: got" in result.stderr  # the element, got and expected
    assert "# nothing written: a check failed" in result.stdout
    assert "comm" in result.stdout  # the table is still shown
    assert list(tmp_path.iterdir()) == []


def test_the_same_run_without_the_fault_writes_its_files(phase3, tmp_path):
    result = run2(phase3, "--csv", tmp_path / "x.csv")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv", "x.meta.json", "x.timeline.csv",
                                                          "x.timeline.trace.json"]


def test_a_corruption_no_check_reads_is_a_usage_error(phase3, tmp_path):
    command = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "2", phase3,
               *[a for a in SMALL if a != "--check"], "--csv", str(tmp_path / "x.csv"), "--inject-fault", "0:3:corrupt"]
    result = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "--inject-fault: no exact check read a result after step 3" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("signal_number, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_a_signal_ends_the_run_with_128_plus_it_and_no_file(phase2, tmp_path, signal_number, code):
    """SIGINT/SIGTERM/SIGHUP: the temporaries being written are removed, the exit code is 128 + the signal (never 1,
    which means a check failed), and no file of the run is left."""
    process = subprocess.Popen([str(phase2), "--chunks", "10", "--compute-ms", "50", "--comm-ms", "20", "--iters", "20",
                                "-q", "--csv", str(tmp_path / "x.csv")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.0)
    process.send_signal(signal_number)
    process.communicate(timeout=30)
    assert process.returncode == code
    assert list(tmp_path.iterdir()) == []


def _limit_file_size():
    import resource
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (2000, resource.RLIM_INFINITY))


@pytest.fixture(scope="module")
def small_run(phase2, tmp_path_factory):
    out = tmp_path_factory.mktemp("small")
    result = subprocess.run([str(phase2), "--chunks", "3", "--compute-ms", "1", "--comm-ms", "1", "--iters", "2", "-q",
                             "--csv", str(out / "run.csv")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.parametrize("script, args", [("plot_summary.py", ["run.csv", "-o", "{out}/fig.png"]),
                                          ("report.py", ["{out}"])])
def test_scripts_on_a_full_disk_exit_3_naming_the_file_and_leave_no_temporary(small_run, tmp_path, script, args):
    """A full disk (RLIMIT_FSIZE: writes past 2000 bytes fail) while a figure or report.md is written: one line,
    exit 3, no traceback, no temporary, and an older report untouched."""
    out = tmp_path / "out"
    shutil.copytree(small_run, out)
    (out / "report.md").write_text("older report\n")
    before = sorted(p.name for p in out.iterdir())
    command = [*tool(script), *[a.format(out=out) for a in args]]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=out, preexec_fn=_limit_file_size)
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "error:" in result.stderr
    leftovers = [p.name for p in out.rglob("*") if ".tmp" in p.name]
    assert leftovers == []
    assert (out / "report.md").read_text() == "older report\n"
    assert sorted(p.name for p in out.iterdir() if p.name != "figures") == [b for b in before if b != "figures"]


def test_a_script_interrupted_exits_128_plus_the_signal(small_run, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(small_run, out)
    process = subprocess.Popen([*tool("report.py"), str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (out / "figures").exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)  # until it draws: its inputs are checked, its handlers installed
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode in (143, 0), err  # 0: it finished first
    assert "Traceback" not in err
    assert [p.name for p in out.rglob("*") if ".tmp" in p.name] == []


def test_a_figure_over_a_fifo_is_refused(small_run, tmp_path):
    fifo = tmp_path / "fig.png"
    os.mkfifo(fifo)
    result = subprocess.run([*tool("plot_summary.py"), str(small_run / "run.csv"),
                             "-o", str(fifo)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "a regular file" in result.stderr, result.stderr
    assert fifo.is_fifo()


def test_report_escapes_what_csv_fields_carry_into_markdown(small_run, tmp_path):
    import pandas as pd
    out = tmp_path / "out"
    out.mkdir()
    frame = pd.read_csv(small_run / "run.csv")
    parts = []
    for text in ("a|b", "<b>bold</b>\nnext"):
        part = frame.copy()
        part["workload"] = text
        parts.append(part)
    pd.concat(parts).to_csv(out / "odd.csv", index=False)
    meta = json.loads((small_run / "run.meta.json").read_text())
    meta["command_line"] = ["phase2", "--csv", "x|y<z>.csv"]
    (out / "odd.meta.json").write_text(json.dumps(meta))
    result = subprocess.run([*tool("report.py"), str(out)], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = (out / "report.md").read_text()
    assert "workload=a\\|b" in report
    assert "&lt;b&gt;bold&lt;/b&gt; next" in report and "<b>" not in report
    assert "x\\|y&lt;z&gt;.csv" in report


@pytest.mark.parametrize("script, kind", [("plot_summary.py", "csv"), ("plot_gantt.py", "timeline.csv")])
def test_rows_with_a_trailing_comma_are_read_as_they_are(small_run, tmp_path, script, kind):
    lines = (small_run / f"run.{kind}" if kind != "csv" else small_run / "run.csv").read_text().splitlines()
    (tmp_path / "t.csv").write_text("\n".join([lines[0]] + [line + "," for line in lines[1:]]) + "\n")
    result = subprocess.run([*tool(script), str(tmp_path / "t.csv"), "-o",
                             str(tmp_path / "t.png")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "t.png").is_file()


def children_of(parent):
    """Process ids whose parent is `parent` (from /proc: no pgrep needed)."""
    children = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            children.append(int(stat.parent.name))
    return children


def test_signalled_ranks_end_the_job_with_143_and_no_file(phase3, tmp_path):
    """SIGTERM to every rank (as a scheduler signals its tasks): each removes its temporaries and exits 143, mpirun
    returns 143, no file is left. (5000 iterations: long enough, within the timeline's event limit.)"""
    process = subprocess.Popen(["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "2", phase3, "--device", "cpu",
                                "--iters", "5000", "-q", "--csv", str(tmp_path / "x.csv")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    deadline = time.monotonic() + 60
    ranks = []
    while len(ranks) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
        ranks = children_of(process.pid)
    time.sleep(1.0)  # inside the run
    for pid in ranks:
        os.kill(pid, signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err
    assert list(tmp_path.iterdir()) == []
