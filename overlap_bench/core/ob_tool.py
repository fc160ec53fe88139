"""What every command-line tool of the suite shares, as the binaries share common/: usage errors (one line, exit 2:
`UsageError`; `ArgumentParser` and the argument types, such as `output_path`, from arguments.py, re-exported here),
the one input policy (`require_input`) and output policy (`require_outputs`), outputs written whole or not at all
(`staged`, `write_text_atomic`), signals and exit codes (`main_guard`: never a traceback), the checkout's commit
(`commit_id`) and its built binaries (`find_built`)."""
import contextlib
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from overlap_bench.core.arguments import (  # noqa: F401 -- re-exported: the tools name them ob_tool.<name>
    MOST_INPUT_BYTES, PACK, ArgumentParser, any_text, describe, distinct, executable, input_file, input_folder,
    input_path, is_number, listed, number_in, one_line, output_file, output_folder, output_path, output_tree,
    repeatable, whole)


class UsageError(Exception):
    """Bad input: the message is one line; the exit code is 2."""


def model_shape(model, binary):
    """The shape of a transformer preset or config.json as `binary` (phase4_model) parses it: one parser for phase 4
    and PyTorch. Its usage errors (an unknown preset, a missing key) come back as UsageError."""
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "shape.json"
        result = subprocess.run([binary, "--model", model, "--shape-json", str(path)], capture_output=True, text=True)
        if result.returncode == 2:
            raise UsageError(result.stderr.strip().split(": error: ", 1)[-1])
        if result.returncode != 0:
            raise OSError(f"{binary} exited {result.returncode}: {result.stderr.strip()}")
        return json.loads(path.read_text())


def model_blocks(model, blocks, binary=None):
    """--model and --blocks of bench_ddp.py and trace_job.py: the model's shape (model_shape, phase4_model found as
    find_built finds it), its block count checked against `blocks` (0: all). UsageError naming the option."""
    shape = model_shape(model, find_built("phase4_model", binary))
    if blocks > shape["layers"]:
        raise UsageError(f"--blocks: '{blocks}' is invalid: at most the model's {shape['layers']} blocks")
    return shape


SANITIZED_PRESETS = {"asan"}  # CMakePresets.json's builds under a sanitizer


def find_built(name, given=None, folder="phase4_chunked_nccl", root=None):
    """A binary of the suite: `given`, else on PATH (cmake --install), else in the build folders of `root` (this
    checkout)."""
    if given:
        return given
    found = shutil.which(name)
    if found:
        return found
    # The default preset's first, a sanitized build's last: build/asan sorts first by name, and its binaries run
    # slower and cannot start under a limit on address space (a second scripts/test.sh ran its phase4_predict).
    def preference(path):
        preset = path.parent.parent.name
        return (preset in SANITIZED_PRESETS, preset != "default", preset)

    root = pathlib.Path(root) if root else REPO
    for build in sorted((root / "build").glob(f"*/{folder}/{name}"), key=preference):
        if os.access(build, os.X_OK):
            return str(build)
    raise UsageError(f"{name} not found: build it (scripts/test.sh), install it, or pass its path")


def _identity(path):
    """One file however it is spelled: its folder resolved (links too), then its name."""
    path = pathlib.Path(os.path.abspath(path))
    return path.parent.resolve() / path.name


def require_outputs(outputs, inputs=(), created=False):
    """The suite's one output policy (as the binaries' ob::require_output_policy): every output (option, path) is
    absent or a regular file, never a symbolic link (it would be replaced, not written through), a device, FIFO,
    socket or folder; in a folder that exists (unless the tool makes it: `created`); no two outputs are one file
    however spelled; no output is one of the inputs (option, path), which it would destroy before reading. A usage
    error naming the option and what is allowed, before any work."""
    seen = {}
    for option, path in outputs:
        path = pathlib.Path(path)
        if not created and not path.parent.is_dir():
            raise UsageError(f"{option}: '{path}' is invalid: its folder '{path.parent}' does not exist")
        if path.is_symlink():
            raise UsageError(f"{option}: '{path}' is invalid: a symbolic link (it would be replaced, not written "
                             "through): name the file it points to")
        if path.exists() and not path.is_file():
            raise UsageError(f"{option}: '{path}' is invalid: a regular file (it is a folder, device, FIFO or socket)")
        identity = _identity(path)
        if identity in seen:
            raise UsageError(f"{option}: '{path}' is invalid: a path of its own: {seen[identity]} writes it too")
        seen[identity] = option
        for source, read in inputs:
            same = identity == _identity(read) or (path.exists() and pathlib.Path(read).exists()
                                                   and os.path.samefile(path, read))
            if same:
                raise UsageError(f"{option}: '{path}' is invalid: not the file {source} reads (it would be destroyed "
                                 "before it is read)")


def require_input(path, option, most=MOST_INPUT_BYTES):
    """The suite's one input policy (as the binaries' ob::read_input_file): a regular file (a link to one is
    followed), readable, of at most `most` bytes, before anything reads it; returns its path. A device, FIFO or
    folder (/dev/zero read until memory runs out), a missing file or one too large is a usage error naming the
    option."""
    path = pathlib.Path(path)
    try:
        status = path.stat()
    except OSError:
        raise UsageError(f"{option}: '{path}' is invalid: no such file") from None
    import stat

    if not stat.S_ISREG(status.st_mode):
        raise UsageError(f"{option}: '{path}' is invalid: a regular file (it is a folder, device, FIFO or socket)")
    if status.st_size > most:
        raise UsageError(f"{option}: '{path}' is invalid: {status.st_size} bytes, at most {most} are read")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{option}: '{path}' is invalid: not readable")
    return path


# Temporaries being written: a signal removes them before the process ends (main_guard).
_TEMPORARIES = set()
# What else a signal must end first (at_signal): a running child's process group, say.
_AT_SIGNAL = []


def at_signal(callback):
    """Registers `callback()` to run when SIGINT/SIGTERM/SIGHUP ends a main_guard process, before its temporaries are
    removed (a script that starts children in their own sessions ends them with it); once, however often asked."""
    if callback not in _AT_SIGNAL:
        _AT_SIGNAL.append(callback)


_GUARDIAN = []  # the guardian process, once started (guard)
_GUARDIAN_CODE = """
import json, os, shutil, signal, sys
held = set()
for line in sys.stdin:
    kind, value, add = json.loads(line)
    (held.add if add else held.discard)((kind, value))
for kind, value in sorted(held):  # process groups first ("g" < "p"), then the folders they wrote into
    try:
        os.killpg(value, signal.SIGKILL) if kind == "g" else shutil.rmtree(value, ignore_errors=True)
    except OSError:
        pass
"""


def guard(kind, value, add=True):
    """What must not outlive this process however it ends, SIGKILL included, which no handler sees: a child's process
    group (kind "g", its id) or a folder this process writes (kind "p", its path), held (`add`) or let go. A small
    guardian process of its own session, started at the first call, reads them from a pipe; when the pipe closes
    (this process ended) it kills the groups still held and removes the folders."""
    if not _GUARDIAN:
        _GUARDIAN.append(subprocess.Popen([sys.executable, "-c", _GUARDIAN_CODE], stdin=subprocess.PIPE,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))  # holds none of this process's pipes
    try:
        _GUARDIAN[0].stdin.write((json.dumps([kind, value if kind == "g" else str(value), add]) + "\n").encode())
        _GUARDIAN[0].stdin.flush()
    except OSError:  # the guardian is gone: what it held is left to the signal handlers
        pass


@contextlib.contextmanager
def staged(path, name):
    """A temporary beside `path` (named `name`) to write; renamed over `path` when the block ends well, removed
    whatever happens (a signal included: main_guard). The one writer: a symbolic link, folder, device or FIFO at
    `path` is refused before anything is written (it would be replaced, not written through)."""
    require_outputs([("output", path)], created=True)
    temporary = path.with_name(name)
    _TEMPORARIES.add(temporary)
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
        _TEMPORARIES.discard(temporary)


def write_text_atomic(path, text):
    """Writes text under a temporary name beside `path`, then renames it: whole or not at all (the temporary is
    removed on any failure, a full disk or a signal included)."""
    path = pathlib.Path(path)
    with staged(path, f".{path.name}.{os.getpid()}.tmp") as temporary:
        temporary.write_text(text)


def write_bytes_atomic(path, data):
    """write_text_atomic for bytes."""
    path = pathlib.Path(path)
    with staged(path, f".{path.name}.{os.getpid()}.tmp") as temporary:
        temporary.write_bytes(data)


REPO = pathlib.Path(__file__).resolve().parents[2]  # a checkout's root; the folder that holds the package


def module_command(name):
    """The command that runs the package's module `name` (its room and name: "trace.analyze") with this Python (from
    a checkout or an installation; the caller's environment needs export_package_path's)."""
    return [sys.executable, "-m", f"overlap_bench.{name}"]


def export_package_path():
    """In a checkout, puts its root first on PYTHONPATH, so that the processes this one starts import the same package
    (`python -m overlap_bench.X`, `torchrun -m overlap_bench.ddp.bench_ddp`) wherever they run. An installed package is
    left as it is: its interpreter finds it, and another interpreter (a contender's own environment) must not be
    handed this one's site-packages."""
    if not (REPO / "pyproject.toml").is_file():
        return
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))


def commit_id(repo=REPO):
    """The commit these scripts run from, checked as the binaries check theirs (cmake/GitCommit.cmake, which digests
    the scripts too): the commit of a clean checkout; `-dirty` when tracked files changed or the tree differs from
    OVERLAP_GIT_DIGEST; `<OVERLAP_GIT_COMMIT>-unverified` where nothing can check the name (no .git, no digest, no
    CMake); "unknown" without any of them. Never typed by hand."""
    script = pathlib.Path(repo) / "cmake" / "GitCommit.cmake"
    named = os.environ.get("OVERLAP_GIT_COMMIT", "")
    if shutil.which("cmake") is None or not script.is_file():
        return f"{named}-unverified" if named else "unknown"
    with tempfile.TemporaryDirectory() as scratch:
        header = pathlib.Path(scratch) / "git_commit.hpp"
        done = subprocess.run(["cmake", f"-DSOURCE_DIR={repo}", f"-DOUTPUT={header}", "-P", str(script)],
                              capture_output=True, text=True, timeout=120)
        found = re.search(r'kGitCommit = "([^"]*)"', header.read_text()) if header.is_file() else None
    if done.returncode != 0 or not found:
        return f"{named}-unverified" if named else "unknown"
    return found.group(1)


def load_toml(path, option, most=1 << 20):
    """A TOML file (an experiment's spec) as a dict: one that cannot be read or parsed is a usage error naming the
    option and the file."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    try:
        return tomllib.loads(read_small(path, option, most))
    except RecursionError:
        raise UsageError(f"{option}: '{path}' cannot be read (it nests too deep)") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise UsageError(f"{option}: '{path}' cannot be read ({str(error).splitlines()[0]})") from None


MOST_SMALL_BYTES = 16 << 20  # a file a tool reads whole: metadata, a calibration, a log it quotes, a spec


def read_small(path, option, most=MOST_SMALL_BYTES):
    """The text of an input a tool reads whole, through the input policy with a cap fit for reading whole (a
    usage error naming the option and the file past it), never the whole of a file of gigabytes."""
    return require_input(path, option, most).read_text(errors="replace")


def _end_on_signal(number, _frame):
    """Removes the temporaries being written and ends the process at once with 128 + the signal. (Raising instead
    would reach library code mid-import, which may wrap it and print a traceback.)"""
    for callback in _AT_SIGNAL:
        try:
            callback()
        except Exception:  # noqa: BLE001 -- the process is ending; the temporaries must still go
            pass
    for temporary in list(_TEMPORARIES):
        try:
            os.unlink(temporary)
        except OSError:
            pass
    os._exit(128 + number)


def main_guard(function):
    """Runs a script's main: UsageError -> one line on stderr and exit 2; an I/O failure (a full disk, an output
    that cannot be written) -> one line naming the file and exit 3; any other exception -> one line naming an
    internal error, exit 3, its traceback in a file the line names; SIGINT/SIGTERM/SIGHUP -> temporaries removed,
    exit 130/143/129. Never a traceback on the terminal. The processes it starts import this same package
    (export_package_path)."""
    name = pathlib.Path(sys.argv[0]).name
    export_package_path()
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, _end_on_signal)
    try:
        return function()
    except UsageError as error:
        print(f"{name}: error: {one_line(error)}", file=sys.stderr)
        return 2
    except OSError as error:
        where = error.filename or ""
        print(f"{name}: error: {where}{': ' if where else ''}{error.strerror or error}", file=sys.stderr)
        return 3
    except Exception as error:  # noqa: BLE001 -- any other failure: one line and a file with its traceback
        print(f"{name}: internal error: {type(error).__name__}: {_first_line(error)} (traceback in "
              f"{_traceback_file(name)})", file=sys.stderr)
        return 3


def _first_line(error):
    text = str(error).strip()
    return text.splitlines()[0][:200] if text else "no message"


def _traceback_file(name):
    """The current exception's traceback written to a file of its own (the temporary folder); its path."""
    import traceback

    handle, path = tempfile.mkstemp(prefix=f"{name}-traceback-", suffix=".txt")
    with os.fdopen(handle, "w") as sink:
        sink.write(f"{' '.join(sys.argv)}\n\n{traceback.format_exc()}")
    return path


if __name__ == "__main__":  # a library of the other scripts, not a command: say so
    print(__doc__.strip() + "\n\nA module the suite's scripts import; it has no command line of its own.")
