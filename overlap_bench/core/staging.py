"""The output folder one invocation of a tool owns (ob-compare, ob-analyze): a lock on it, every file written into a
staging folder of this invocation's own, then committed whole."""
import fcntl
import os
import pathlib
import shutil
import signal

from overlap_bench.core import ob_tool


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
        ob_tool.guard("p", self.path)  # removed even when a SIGKILL ends this invocation
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
        ob_tool.guard("p", self.path, add=False)

    def release(self):
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def commit(self, last="compare.csv"):
        """Moves every staged file and the runs folder into the output folder, `last` last (an older file or runs
        folder of the same name is replaced); if any move fails, every file is put back as it was, the older ones
        included. A symbolic link, or a folder this tool did not write, where a file goes is refused before anything
        moves (it would be replaced: never delete what the tool did not write)."""
        names = sorted(p.name for p in self.path.iterdir() if p.name != last) + \
            ([last] if (self.path / last).exists() else [])
        linked = next((self.out / n for n in names if (self.out / n).is_symlink() or
                       ((self.out / n).exists() and not (self.out / n).is_file())), None)
        if linked is not None:
            self.discard()
            self.release()
            raise ob_tool.UsageError(f"--out: '{linked}' is a symbolic link or folder of its own (it would be "
                                     "replaced): move it away or write elsewhere")
        older = self.out / f".staging-older-{os.getpid()}"
        moved, kept = [], []
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        try:
            for name in names:
                if (self.out / name).exists():  # kept aside until every move has succeeded
                    older.mkdir(exist_ok=True)
                    os.replace(self.out / name, older / name)
                    kept.append(name)
                os.replace(self.path / name, self.out / name)
                moved.append(name)
        except OSError:
            for name in reversed(moved):
                target = self.out / name
                shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(missing_ok=True)
            for name in kept:
                os.replace(older / name, self.out / name)
            raise
        finally:
            shutil.rmtree(older, ignore_errors=True)
            self.discard()
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            self.release()
