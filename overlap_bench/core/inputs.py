"""The one way a tool opens an input it streams (open_input): the input policy (ob_tool.require_input), then the
file, gunzipped where its first bytes say gzip, never read past a cap once inflated, and, for JSON, never nesting
deeper than a cap, both counted as the bytes pass, before any parser sees them."""
from overlap_bench.core.ob_tool import MOST_INPUT_BYTES, UsageError, require_input

MOST_INFLATED_BYTES = 4 << 30  # the most a gzipped input may inflate to (a 1 GB trace gzips to about 100 MB)
MOST_JSON_DEPTH = 512  # the deepest nesting a JSON input may hold (a profiler's trace nests about 7 deep)


class _Capped:
    """A binary stream that raises a UsageError naming its file once more than `most` bytes were read from it, or,
    given `depth`, once its brackets nest deeper than that: counted as the bytes pass, before a JSON parser sees them
    (ijson's memory grows with the square of the nesting; a bracket inside a string counts too, which a real input
    never takes near the cap)."""

    def __init__(self, stream, path, option, most, depth=None):
        self.stream, self.path, self.option, self.most, self.read_bytes = stream, path, option, most, 0
        self.depth_most, self.depth = depth, 0

    def read(self, size=-1):
        data = self.stream.read(size if size is not None and size >= 0 else self.most + 1 - self.read_bytes)
        self.read_bytes += len(data)
        if self.read_bytes > self.most:
            raise UsageError(f"{self.option}: '{self.path}' is invalid: it inflates past {self.most >> 20} MiB")
        if self.depth_most is not None and data:
            self._nest(data)
        return data

    def _nest(self, data):
        import numpy as np

        b = np.frombuffer(data, dtype=np.uint8)
        running = np.cumsum(((b == 91) | (b == 123)).astype(np.int64) - ((b == 93) | (b == 125))) + self.depth
        if running.max() > self.depth_most:
            raise UsageError(f"{self.option}: '{self.path}' is invalid: it nests deeper than {self.depth_most}")
        self.depth = int(running[-1])

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.stream.close()

    def close(self):
        self.stream.close()


def open_input(path, option, most=MOST_INPUT_BYTES, inflated=MOST_INFLATED_BYTES, json_depth=None):
    """The one way a tool opens an input it streams: the input policy (require_input), then the file, gunzipped where
    its first bytes say gzip, never read past `inflated` bytes once inflated (a small file that inflates to
    gigabytes is a usage error, not a full memory or disk), and, given `json_depth`, never nesting deeper."""
    import gzip

    path = require_input(path, option, most)
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    return _Capped(gzip.open(path, "rb") if gzipped else open(path, "rb"), path, option,
                   inflated if gzipped else most, json_depth)
