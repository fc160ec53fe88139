"""Which reader reads a trace, chosen by its content: each format a row (name, sniff, read), registered by the module
that reads it, where its code stands (trace_read: the PyTorch profiler's Kineto JSON; trace_nsys: Nsight Systems'
SQLite export; trace_own: this suite's timeline CSV and Chrome trace). A new format is one module that calls
register() and its name in FORMAT_MODULES. The sniffs see the file's first bytes (gunzipped where it is gzip) and its
path; the first that claims the file reads it, the catch-all (Kineto, whose reader says what a file that is no trace
is) last. Standard library only."""
import dataclasses
import gzip
import importlib
import pathlib
import zlib

# The modules that register a format, imported before the first choice.
FORMAT_MODULES = ("trace_nsys", "trace_own", "trace_read")
HEAD_BYTES = 256


@dataclasses.dataclass(frozen=True)
class Format:
    name: str
    sniff: object  # (head bytes, path) -> bool
    read: object  # path -> [RankTrace], one per rank the file holds
    catch_all: bool = False


FORMATS = []


def register(name, sniff, read, catch_all=False):
    """Adds a format (once: a module imported twice registers once)."""
    if not any(f.name == name for f in FORMATS):
        FORMATS.append(Format(name, sniff, read, catch_all))


def head(path):
    """The file's first HEAD_BYTES, gunzipped where they are gzip's (a corrupt gzip: its raw bytes)."""
    with open(path, "rb") as source:
        raw = source.read(HEAD_BYTES)
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as source:
                return source.read(HEAD_BYTES)
        except (OSError, EOFError, zlib.error):  # corrupt: the reader's inputs.open_input names it
            return raw
    return raw


def choose(path):
    """The Format that reads `path` (the catch-all where no other claims it)."""
    for module in FORMAT_MODULES:
        importlib.import_module(f"overlap_bench.trace.{module}")
    path = pathlib.Path(path)
    first = head(path)
    ordered = [f for f in FORMATS if not f.catch_all] + [f for f in FORMATS if f.catch_all]
    return next(f for f in ordered if f.sniff(first, path))
