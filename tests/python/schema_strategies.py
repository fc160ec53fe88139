"""Hypothesis strategies generated from the inputs' declared schemas (overlap_bench/core/schemas/, through
hypothesis-jsonschema), for test_fuzz_schemas.py: `valid(kind)` draws values the schema accepts, `broken(kind)` the
same values with one field given another value, removed, or an unknown key added, which a reader must either read or
refuse in one line. `toml_text` writes a drawn value as TOML (the experiments' format).

hypothesis-jsonschema 0.23 drives Hypothesis' private `many()` through `more()`, which newer Hypothesis releases
replaced by a context manager; `Many` below adapts the one to the other where it is needed."""
import json
import math
import types

import pytest

hypothesis_jsonschema = pytest.importorskip("hypothesis_jsonschema", reason="hypothesis-jsonschema is not installed")
from hypothesis import strategies as st  # noqa: E402
from hypothesis.internal.conjecture import utils as conjecture_utils  # noqa: E402
from hypothesis_jsonschema import _from_schema  # noqa: E402

from overlap_bench.core import validate  # noqa: E402


class Many:
    """The `more()`/`reject()` of Hypothesis' older many() over the newer `with many(...) as e: for _ in e`."""

    def __init__(self, data, **sizes):
        self.inner = conjecture_utils.many(data, **sizes)
        self.inner.__enter__()
        self.steps, self.open = iter(self.inner), True

    def more(self):
        if self.open and next(self.steps, StopIteration) is StopIteration:
            self.open = False
            self.inner.__exit__(None)
        return self.open

    def reject(self, why=None):
        self.inner.reject()


if not hasattr(conjecture_utils.many, "more"):
    _from_schema.cu = types.SimpleNamespace(**{**vars(conjecture_utils), "many": Many})

# Any JSON value a field could be given instead of its own (NaN and Infinity included: TOML has them).
VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=12),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                   max_size=3), max_leaves=6)


def valid(kind, *inside):
    """Values the schema of `kind` accepts (its part at the properties `inside`, e.g. the probe's "tune")."""
    schema = validate.resolved(kind)
    for key in inside:
        schema = schema["properties"][key]
    return _from_schema.from_schema(schema)


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, path + (key,))
    elif isinstance(value, list):
        for index, inner in enumerate(value[:4]):
            yield from _paths(inner, path + (index,))


@st.composite
def broken(draw, kind):
    """A value of `kind`'s schema with one field changed: given another value, removed, or a key added beside it."""
    value = draw(valid(kind))
    paths = [p for p in _paths(value) if p]
    if not paths:
        return draw(VALUES)
    path = draw(st.sampled_from(paths))
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    action = draw(st.sampled_from(["retype", "remove", "add"]))
    if action == "retype":
        parent[path[-1]] = draw(VALUES)
    elif action == "remove":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[draw(st.text(max_size=8))] = draw(VALUES)
    else:
        parent.append(draw(VALUES))
    return value


def _toml(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    return '""'  # None: TOML has no null


def toml_text(value):
    """A dict as TOML: a key a line, its value inline (tables as inline tables)."""
    if not isinstance(value, dict):
        return f"value = {_toml(value)}\n"
    return "".join(f"{json.dumps(k)} = {_toml(v)}\n" for k, v in value.items())
