"""The one way a tool opens an input it streams (open_input): the input policy (ob_tool.require_input), then the
file, gunzipped where its first bytes say gzip, never read past a cap once inflated, and, for JSON, never nesting
deeper than a cap, both counted as the bytes pass, before any parser sees them."""
import gzip
import json
import zlib

from overlap_bench.core.ob_tool import MOST_INPUT_BYTES, MOST_SMALL_BYTES, UsageError, require_input

MOST_INFLATED_BYTES = 4 << 30  # the most a gzipped input may inflate to (a 1 GB trace gzips to about 100 MB)
MOST_JSON_DEPTH = 512  # the deepest nesting a JSON input may hold (a profiler's trace nests about 7 deep)


class _Capped:
    """A binary stream that raises a UsageError naming its file once more than `most` bytes were read from it, or,
    given `depth`, once its brackets nest deeper than that: counted as the bytes pass, before a JSON parser sees them
    (ijson's memory grows with the square of the nesting; a bracket inside a string does not count)."""

    def __init__(self, stream, path, option, most, depth=None):
        self.stream, self.path, self.option, self.most, self.read_bytes = stream, path, option, most, 0
        self.depth_most, self.nesting = depth, (0, False, 0)

    def read(self, size=-1):
        try:
            data = self.stream.read(size if size is not None and size >= 0 else self.most + 1 - self.read_bytes)
        except (EOFError, zlib.error, gzip.BadGzipFile) as error:  # a corrupt or cut gzip stream
            raise UsageError(f"{self.option}: '{self.path}' is invalid: not a readable gzip file "
                             f"({str(error).splitlines()[0] if str(error) else type(error).__name__})") from None
        self.read_bytes += len(data)
        if self.read_bytes > self.most:
            raise UsageError(f"{self.option}: '{self.path}' is invalid: it inflates past {self.most >> 20} MiB")
        if self.depth_most is not None and data:
            self._nest(data)
        return data

    def _nest(self, data):
        self.nesting = _nest(data, self.nesting, self.depth_most, lambda: UsageError(
            f"{self.option}: '{self.path}' is invalid: it nests deeper than {self.depth_most}"))

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.stream.close()

    def close(self):
        self.stream.close()


def gunzip(data, path, option, most):
    """Gzipped bytes inflated, never past `most` (a usage error naming the option and the file, as for a corrupt
    stream)."""
    import io

    with _Capped(gzip.GzipFile(fileobj=io.BytesIO(data)), path, option, most) as stream:
        return stream.read()


def open_input(path, option, most=MOST_INPUT_BYTES, inflated=MOST_INFLATED_BYTES, json_depth=None):
    """The one way a tool opens an input it streams: the input policy (require_input), then the file, gunzipped where
    its first bytes say gzip, never read past `inflated` bytes once inflated (a small file that inflates to
    gigabytes is a usage error, not a full memory or disk), and, given `json_depth`, never nesting deeper."""
    path = require_input(path, option, most)
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    return _Capped(gzip.open(path, "rb") if gzipped else open(path, "rb"), path, option,
                   inflated if gzipped else most, json_depth)


def _nest(data, state, most, refuse):
    """The JSON nesting of `data` after `state` (depth, inside a string, backslashes just before), counted as the
    bytes pass: brackets inside strings do not count, a quote after an odd run of backslashes does not end a string.
    Calls `refuse()` for the exception to raise once the nesting passes `most`; returns the state after `data`."""
    import numpy as np

    depth, inside, slashes = state
    b = np.frombuffer(data, dtype=np.uint8)
    if not len(b):
        return state
    backslash = b == 92
    count = np.cumsum(backslash)
    run = count - np.maximum.accumulate(np.where(backslash, 0, count))  # backslashes ending at each byte
    run[:len(b) if backslash.all() else int(np.argmin(backslash))] += slashes  # the run the last bytes began
    before = np.concatenate(([slashes], run[:-1]))
    parity = np.cumsum((b == 34) & (before % 2 == 0)) + inside  # odd inside a string
    step = ((b == 91) | (b == 123)).astype(np.int64) - ((b == 93) | (b == 125))
    running = np.cumsum(np.where(parity % 2 == 1, 0, step)) + depth
    if running.max() > most:
        raise refuse()
    return int(running[-1]), bool(parity[-1] % 2), int(run[-1])


def parse_json(data, where, depth=MOST_JSON_DEPTH, finite=True):
    """JSON text (bytes or str) as Python values, its nesting bounded before the parser sees it (no RecursionError
    however deep) and, with `finite`, NaN and Infinity refused: any fault a UsageError naming `where`."""
    raw = data.encode() if isinstance(data, str) else data
    _nest(raw, (0, False, 0), depth, lambda: UsageError(f"{where}: nests deeper than {depth}"))

    def constant(name):
        raise ValueError(f"{name} is not a number JSON holds")

    try:
        return json.loads(raw, parse_constant=constant if finite else None)
    except (ValueError, RecursionError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise UsageError(f"{where}: not JSON ({str(error).splitlines()[0]})") from None


def load_json(path, option, most=MOST_SMALL_BYTES, depth=MOST_JSON_DEPTH, finite=True, schema=None):
    """The one way a tool reads a JSON input whole (a calibration, metadata, a spec): the input policy, at most
    `most` bytes (gunzipped where it is gzip, the inflated size bounded), nesting bounded as the bytes pass (strings
    excluded), then parsed (parse_json) and, given `schema` (a kind of validate.KINDS), checked against its declared
    schema before any number is used. Any fault is a UsageError naming the option and the file."""
    with open_input(path, option, most=most, inflated=most, json_depth=depth) as stream:
        data = stream.read()
    return checked(parse_json(data, f"{option}: '{path}' is invalid", depth, finite), schema, option, path)


def checked(value, schema, option, path):
    """`value` checked against the declared schema of kind `schema` (none: as it is); a UsageError naming the option,
    the file, the field and the rule."""
    if schema is None:
        return value
    from overlap_bench.core import validate

    return validate.check(value, schema, f"{option}: '{path}' is invalid")
