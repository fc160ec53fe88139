"""ob-analyze-bench's other tools, each run as a fresh process on the same trace file as ob-analyze, in the Python a
user installed it into (--hta-python, --tracelens-python): Holistic Trace Analysis (`TraceAnalysis` over a folder
holding the trace, its temporal breakdown and its communication/computation overlap: the figures ob-analyze gives)
and AMD's TraceLens (`generate_perf_report_pytorch` to CSVs: its GPU timeline, operators and collectives). Each is
capped in time (a run past the cap is stopped, its process group killed, and recorded as "> N s"); a tool that ran
past the cap on a smaller trace is not run on a larger one; a tool that cannot run is one line why. Their wall time,
CPU time (every process they ran), MB/s per core and peak resident memory go in the same row as ob-analyze's."""
import os
import pathlib
import signal
import subprocess
import tempfile
import time

HTA = ("import sys\nfrom hta.trace_analysis import TraceAnalysis\n"
       "analysis = TraceAnalysis(trace_dir=sys.argv[1])\n"
       "analysis.get_temporal_breakdown(visualize=False)\n"
       "analysis.get_comm_comp_overlap(visualize=False)\n")
TRACELENS = ("import sys\nfrom TraceLens.Reporting.generate_perf_report_pytorch import generate_perf_report_pytorch\n"
             "generate_perf_report_pytorch(sys.argv[1], output_csvs_dir=sys.argv[2])\n")
PROBES = {"hta": "import hta.trace_analysis", "tracelens": "import TraceLens.Reporting.generate_perf_report_pytorch"}


def capped(command, cap_s):
    """(status, wall s, CPU s, peak resident MB) of `command` as a fresh process group, stopped after `cap_s` (its
    own resource usage, wait4: not that of every child run before it)."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        stopped = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > cap_s:
                os.killpg(child.pid, signal.SIGKILL)
                _, status, usage = os.wait4(child.pid, 0)
                stopped = True
                break
            time.sleep(0.1)
        child.returncode = code = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        err.seek(0)
        text = err.read().decode(errors="replace").strip()
    seconds = time.monotonic() - start
    if stopped:
        state = f"> {cap_s:g} s (stopped)"
    else:
        state = "ran" if code == 0 else "failed: " + (text.splitlines() or [f"exit {code}"])[-1][:160]
    return state, seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def unavailable(python, name):
    """Why `name` cannot run in `python`, or None where it can."""
    if not python:
        return f"not installed: no --{name}-python given"
    if not pathlib.Path(python).is_file():
        return f"not installed: {python} is not a file"
    done = subprocess.run([python, "-c", PROBES[name]], capture_output=True, text=True)
    if done.returncode:
        return f"not installed in {python}: " + (done.stderr.strip().splitlines() or ["import failed"])[-1][:120]
    return None


def run(name, python, trace, scratch, cap_s, skipped=None):
    """The row's columns for tool `name` on `trace`: {name}_status, _seconds, _cpu_s, _mb_per_cpu_s, _max_rss_mb.
    `skipped`: a reason not to run it (it ran past the cap on a smaller trace)."""
    nan = float("nan")
    reason = skipped or unavailable(python, name)
    if reason:
        return {f"{name}_status": reason, f"{name}_seconds": nan, f"{name}_cpu_s": nan, f"{name}_mb_per_cpu_s": nan,
                f"{name}_max_rss_mb": nan}
    scratch = pathlib.Path(scratch) / name
    scratch.mkdir(parents=True, exist_ok=True)
    if name == "hta":  # HTA reads a folder of traces, one a rank
        folder = scratch / "traces"
        folder.mkdir(exist_ok=True)
        link = folder / ("rank0" + "".join(pathlib.Path(trace).suffixes))
        if not link.exists():
            link.symlink_to(pathlib.Path(trace).resolve())
        command = [python, "-c", HTA, str(folder)]
    else:
        command = [python, "-c", TRACELENS, str(trace), str(scratch / "csvs")]
    status, seconds, cpu, peak = capped(command, cap_s)
    size = pathlib.Path(trace).stat().st_size
    return {f"{name}_status": status, f"{name}_seconds": seconds, f"{name}_cpu_s": cpu,
            f"{name}_mb_per_cpu_s": size / 1e6 / cpu if status == "ran" and cpu > 0 else nan,
            f"{name}_max_rss_mb": peak}


def stopped(row, name):
    """Whether `name` ran past its cap in `row` (then it is not run on a larger trace)."""
    return str(row.get(f"{name}_status", "")).startswith(">")
