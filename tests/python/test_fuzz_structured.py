"""Structure-aware fuzzing (issue 75): Hypothesis mutates valid inputs, not random bytes, so that the mutations reach
the parsers' deeper paths: a PyTorch profiler trace (an event's field given another type, an impossible time, a
field removed, events added), a phase 4 calibration and a headline experiment (a key's value replaced by another
type, a key removed). Every reader either reads it or says what is wrong as a usage error; never another exception.
Bounded: a few hundred examples in all, each input small, a deadline per example."""
import copy
import json
import math

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from conftest import REPO  # noqa: E402
from overlap_bench.compare import headline  # noqa: E402
from overlap_bench.core import ob_tool  # noqa: E402
from overlap_bench.trace import trace_read, trace_stats  # noqa: E402
from test_analyze import kineto  # noqa: E402

LIMITS = settings(max_examples=120, deadline=5000, suppress_health_check=[HealthCheck.function_scoped_fixture])
# Any JSON value a field could be given instead of its own.
VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True) |
                      st.text(max_size=12), lambda inner: st.lists(inner, max_size=3) |
                      st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)


def base_trace(tmp_path):
    kernels = [(0.0, 10, "gemm", "", 0), (20.0, 13, "gemm", "", 0),
               (20.0, 20, "ncclDevKernel_AllReduce", "allreduce", 4 << 20)]
    extra = [{"ph": "X", "cat": "cpu_op", "name": "torch::autograd::AccumulateGrad", "ts": 5, "dur": 1,
              "args": {"Input Dims": [[4, 4]]}}]
    path = kineto(tmp_path / "base.json", kernels, [(0.0, 100.0)], extra=extra)
    return json.loads(path.read_text())


def mutate(trace, data):
    trace = copy.deepcopy(trace)
    events = trace["traceEvents"]
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["retype", "remove", "add", "header"]))
        event = events[data.draw(st.integers(0, len(events) - 1))]
        if action == "retype":
            key = data.draw(st.sampled_from(["ts", "dur", "name", "cat", "ph", "args"]))
            event[key] = data.draw(VALUES)
        elif action == "remove" and event:
            event.pop(data.draw(st.sampled_from(sorted(event))), None)
        elif action == "add":
            events.append({k: data.draw(VALUES) for k in data.draw(st.lists(
                st.sampled_from(["ph", "cat", "name", "ts", "dur", "args"]), max_size=6, unique=True))})
        elif isinstance(event.get("args"), dict) and event["args"]:
            event["args"][data.draw(st.sampled_from(sorted(event["args"])))] = data.draw(VALUES)
        else:
            trace["distributedInfo"][data.draw(st.sampled_from(["rank", "world_size"]))] = data.draw(VALUES)
    return trace


@LIMITS
@given(data=st.data())
def test_a_mutated_profiler_trace_is_read_or_refused_in_one_line(tmp_path, data):
    trace = mutate(base_trace(tmp_path), data)
    path = tmp_path / "mutated.json"
    path.write_text(json.dumps(trace, allow_nan=True))
    try:
        for rank in trace_read.read(path):
            for step in trace_stats.step_stats(rank):
                assert math.isfinite(step.step_ms) or not rank.kernels
    except ob_tool.UsageError as error:
        assert "\n" not in str(error) and str(path) in str(error)


def valid_experiment():
    return ob_tool.load_toml(REPO / "experiments" / "headline.toml", "--experiment")


@LIMITS
@given(data=st.data())
def test_a_mutated_experiment_is_loaded_or_refused_in_one_line(tmp_path, data):
    spec = valid_experiment()
    key = data.draw(st.sampled_from(sorted(spec)))
    if data.draw(st.booleans()):
        spec.pop(key)
    else:
        spec[key] = data.draw(st.none().map(lambda _: "x") | st.integers(-5, 10 ** 6) | st.booleans() |
                              st.lists(st.text(max_size=8), max_size=3) | st.text(max_size=8))
    lines = []
    for name, value in spec.items():
        lines.append(f"{name} = {json.dumps(value)}")
    path = tmp_path / "headline.toml"
    path.write_text("\n".join(lines) + "\n")
    try:
        loaded = headline.load_experiment(path)
        assert isinstance(loaded["configs"], list) and loaded["rounds"] >= 2
    except ob_tool.UsageError as error:
        assert "\n" not in str(error)


def test_nesting_deep_enough_to_hurt_is_refused_quickly(tmp_path):
    """A trace event nested far deeper than any profiler writes (40 KB that would cost the JSON reader a gigabyte):
    refused in one line, in bounded time and memory, before the parser goes deep."""
    import resource
    trace = base_trace(tmp_path)
    next(e for e in trace["traceEvents"] if "args" in e)["args"]["deep"] = "DEEP"
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(trace).replace('"DEEP"', "[" * 20000 + "]" * 20000))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ob_tool.UsageError, match="nests deeper than 512"):
        trace_read.read(path)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024  # KiB: no quadratic blow-up
