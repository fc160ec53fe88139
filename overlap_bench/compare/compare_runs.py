"""ob-compare's runs: each process of a round started fresh in its own session, its output kept in a log, its whole
process group ended when it returns (a background child outliving its shell included), past its --timeout or the
deadline, or on a signal to ob-compare. The output folder each invocation owns is staging.Staging.
"""
import os
import pathlib
import shlex
import signal
import subprocess
import sys
import time

from overlap_bench.core import ob_tool


_RUNNING = []  # the runs in progress, whose process groups a signal to ob-compare ends (ob_tool.at_signal)


class ContenderFailed(Exception):
    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


class PastDeadline(Exception):
    """A run the deadline cut: its round is dropped."""


def end_group(process, grace=10.0):
    """Ends a run's whole session (its shell, mpirun or torchrun, their ranks, anything they left in the
    background): SIGTERM, then SIGKILL after `grace` seconds while any member remains."""
    for number in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, number)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if process.poll() is not None and not _group_alive(process.pid):
                return
            time.sleep(0.05)


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def end_running():
    for process in list(_RUNNING):
        end_group(process, grace=2.0)


def run_one(command, csv, timeout, log, deadline_left=None, seed=None):
    """Runs a process's command (bash -c, {csv} and {seed} replaced) fresh in its own session, its output into
    `log`. Past `timeout` (or `deadline_left`, when sooner: PastDeadline) its process group is ended; when it
    returns, whatever it left running is ended too. Returns its wall seconds."""
    line = command.replace("{csv}", shlex.quote(str(csv)))
    if seed is not None:
        line = line.replace("{seed}", str(seed))
    cut_by_deadline = deadline_left is not None and deadline_left < timeout
    limit = deadline_left if cut_by_deadline else timeout
    start = time.monotonic()
    # whoever starts a run (ob-compare, ob-headline's calibration, ob-gate) has it ended with it on a signal
    ob_tool.at_signal(end_running)
    with open(log, "w") as sink:
        process = subprocess.Popen(["bash", "-c", line], stdout=sink, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        _RUNNING.append(process)
        ob_tool.guard("g", process.pid)  # ended with ob-compare even by SIGKILL
        try:
            returncode = process.wait(timeout=max(limit, 0.0))
        except subprocess.TimeoutExpired:
            end_group(process)
            if cut_by_deadline:
                raise PastDeadline() from None
            raise ContenderFailed(f"ran past --timeout {timeout:g} s (log: {log})", 3) from None
        finally:
            end_group(process, grace=2.0)  # a background child of a finished run ends with it
            _RUNNING.remove(process)
            ob_tool.guard("g", process.pid, add=False)
    if returncode != 0:
        tail = " | ".join(pathlib.Path(log).read_text(errors="replace").strip().splitlines()[-3:])
        code = {1: 1, 77: 77}.get(returncode, 3)
        raise ContenderFailed(f"exit {returncode}: {tail} (log: {log})", code)
    if not pathlib.Path(csv).is_file():
        raise ContenderFailed(f"exit 0 but wrote no summary at {csv} (log: {log})", 3)
    return time.monotonic() - start


def progress(text):
    print(f"[ob-compare] {text}", file=sys.stderr, flush=True)
