"""ob-compare's runs: each process of a round started fresh in its own session, its output kept in a log, its whole
process group ended when it returns (a background child outliving its shell included), past its --timeout or the
deadline, or on a signal to ob-compare; and the output folder each invocation owns: a lock on it, every file
written into a staging folder of this invocation's own, then committed whole (`Staging`).
"""
import fcntl
import os
import pathlib
import shlex
import shutil
import signal
import subprocess
import sys
import time

from overlap_bench import ob_tool

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
    with open(log, "w") as sink:
        process = subprocess.Popen(["bash", "-c", line], stdout=sink, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        _RUNNING.append(process)
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
    if returncode != 0:
        tail = " | ".join(pathlib.Path(log).read_text(errors="replace").strip().splitlines()[-3:])
        code = {1: 1, 77: 77}.get(returncode, 3)
        raise ContenderFailed(f"exit {returncode}: {tail} (log: {log})", code)
    if not pathlib.Path(csv).is_file():
        raise ContenderFailed(f"exit 0 but wrote no summary at {csv} (log: {log})", 3)
    return time.monotonic() - start


class Staging:
    """The output folder as one invocation owns it: a lock (flock on the folder, released when the process ends
    however it ends)
    so that two comparisons never write one folder; every file written into `.staging-<pid>/` inside it, never read
    from anywhere else; commit() moves the staged files in with signals held off, compare.csv (the file readers
    look for) last, and takes back the ones it moved if a move fails; a signal, a failure or an exit before the
    commit removes the staging folder and leaves the output folder as it was."""

    def __init__(self, out, marker="compare.csv", runs=True):
        self.out = pathlib.Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self._lock = os.open(self.out, os.O_RDONLY | os.O_DIRECTORY)  # the folder itself is the lock: no file left
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            raise ob_tool.UsageError(f"--out: '{out}' is invalid: another ob-compare or ob-analyze is writing "
                                     "it") from None
        if (self.out / marker).exists():
            self.release()
            raise ob_tool.UsageError(f"--out: '{out}' is invalid: it already holds a result ({marker})")
        self.path = self.out / f".staging-{os.getpid()}"
        shutil.rmtree(self.path, ignore_errors=True)
        self.runs = self.path / "runs"
        self.path.mkdir(parents=True)
        if runs:
            self.runs.mkdir()
        ob_tool.at_signal(self.discard)

    def keep_runs(self):
        """The runs folder (every process's log) moved to <out>/failed-runs (an older one replaced), for a failure
        whose message names a log in it; its new path."""
        kept = self.out / "failed-runs"
        shutil.rmtree(kept, ignore_errors=True)
        if self.runs.is_dir():
            os.replace(self.runs, kept)
        return kept

    def discard(self):
        shutil.rmtree(self.path, ignore_errors=True)

    def release(self):
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def commit(self, last="compare.csv"):
        """Moves every staged file and the runs folder into the output folder, `last` last (an old runs folder, left
        by a comparison that never finished, is replaced); nothing is moved in if any move fails."""
        names = sorted(p.name for p in self.path.iterdir() if p.name != last) + \
            ([last] if (self.path / last).exists() else [])
        moved = []
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        try:
            old_runs = self.out / "runs"
            if (self.path / "runs").exists() and old_runs.exists():  # this invocation's runs replace those
                shutil.rmtree(old_runs)
            for name in names:
                os.replace(self.path / name, self.out / name)
                moved.append(name)
        except OSError:
            for name in reversed(moved):
                target = self.out / name
                shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(missing_ok=True)
            raise
        finally:
            self.discard()
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        self.release()


def progress(text):
    print(f"[ob-compare] {text}", file=sys.stderr, flush=True)
