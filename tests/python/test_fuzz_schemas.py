"""Schema-driven fuzzing (issue 83): Hypothesis strategies generated from the inputs' own declared schemas
(schema_strategies.py, hypothesis-jsonschema) feed every reader of those files: values the schema accepts, and the
same with one field changed, removed or added. Each reader either reads the file and uses it to the end, or refuses it
as a usage error of one line naming the file; never another exception (a traceback). Bounded: a few dozen examples a
reader, each small, a deadline per example (the fuzz tests together stay within five minutes on two cores); a failing
example is reported as found, not shrunk (Hypothesis' shrinking took 4.5 minutes over one bench part on two loaded
cores: OB_FUZZ_SHRINK=1 shrinks it, for a reader's author reading the failure)."""
import json
import os
import pathlib

import pytest

pytest.importorskip("hypothesis")
strategies = pytest.importorskip("schema_strategies")
from hypothesis import HealthCheck, Phase, given, settings, strategies as st  # noqa: E402

from overlap_bench.compare import bench_parts, headline  # noqa: E402
from overlap_bench.core import ob_csv, ob_tool, rerun, with_nccl_env  # noqa: E402
from overlap_bench.planner import check_prediction  # noqa: E402
from overlap_bench.probe import tune_check  # noqa: E402
from overlap_bench.trace import probe_split  # noqa: E402

EXAMPLES = int(os.environ.get("OB_FUZZ_EXAMPLES", "25"))  # more for a longer hunt: OB_FUZZ_EXAMPLES=500
PHASES = [p for p in Phase if p != Phase.shrink or os.environ.get("OB_FUZZ_SHRINK") == "1"]
LIMITS = settings(max_examples=EXAMPLES, deadline=10000, database=None, phases=PHASES,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                         HealthCheck.data_too_large, HealthCheck.filter_too_much])


def either(kind):
    return st.one_of(strategies.valid(kind), strategies.broken(kind))


def refused(error, path):
    """A refusal as the suite makes them: one line naming the file."""
    text = str(error)
    assert "\n" not in text and str(path) in text, text


def fresh(tmp_path, name):
    folder = tmp_path / name
    if folder.exists():
        for p in sorted(folder.rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
        folder.rmdir()
    folder.mkdir()
    return folder


@LIMITS
@given(probe=either("probe"), truth=either("truth"))
def test_probe_and_truth_are_read_or_refused_in_one_line(tmp_path, probe, truth):
    folder = fresh(tmp_path, "job")
    (folder / "probe.json").write_text(json.dumps(probe))
    (folder / "truth.json").write_text(json.dumps(truth))
    try:
        row, loaded = probe_split.table_row(folder)
    except ValueError as error:  # probe_split's refusal: one line naming the file
        assert "\n" not in str(error) and str(folder) in str(error)
        return
    result = probe_split.split({"exposed_comm_ms": 1.0, "peer_wait_ms": 0.5, "slowdown_ms": 0.25}, loaded)
    probe_split.sentence(result)
    assert row["step_ms"] > 0 and row["truth_step_ms"] > 0


@LIMITS
@given(probe=either("probe"), tuned=strategies.valid("probe", "tune"), data=st.data(), ratio=st.floats(0.1, 10))
def test_the_tuners_check_reads_a_probe_or_refuses_it_in_one_line(tmp_path, probe, tuned, data, ratio):
    if isinstance(probe, dict) and data.draw(st.booleans()):  # the tuner's verdict, its pick one of its settings
        names = [s["setting"] for s in tuned["settings"]]
        tuned["best"] = data.draw(st.sampled_from(names + [None]) if names else st.none())
        probe["tune"] = tuned
    probe_dir, compare_dir = fresh(tmp_path, "probe"), fresh(tmp_path, "compare")
    (probe_dir / "probe.json").write_text(json.dumps(probe))
    settings_ = probe.get("tune", {}).get("settings", []) if isinstance(probe, dict) and isinstance(
        probe.get("tune"), dict) and isinstance(probe["tune"].get("settings"), list) else []
    names = ["own"] + [str(s.get("setting")) for s in settings_ if isinstance(s, dict)]
    names = names[:data.draw(st.integers(1, len(names)))]  # compare.csv may lack the pick
    lines = ["contender,ratio,ratio_ci_lo,ratio_ci_hi"] + [
        f"{n if n == 'own' else tune_check.tune.contender(n)},{ratio},{ratio / 2},{ratio * 2}" for n in names]
    (compare_dir / "compare.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "check.csv"
    out.unlink(missing_ok=True)
    try:
        tune_check.main(["--csv", str(out), f"job={probe_dir}:{compare_dir}"])
    except ob_tool.UsageError as error:
        assert "\n" not in str(error)
        return
    assert out.is_file()


@LIMITS
@given(calibration=either("calibration"))
def test_a_calibration_is_read_or_refused_in_one_line(tmp_path, calibration):
    path = tmp_path / "c.calibration.json"
    path.write_text(json.dumps(calibration))
    try:
        found = check_prediction.calibrations_by_model([path])
    except ob_tool.UsageError as error:
        refused(error, path)
        return
    assert len(found) == 1


@LIMITS
@given(meta=either("meta"))
def test_metadata_is_read_or_refused_in_one_line(tmp_path, meta):
    folder = fresh(tmp_path, "run")
    summary = folder / "run.csv"
    summary.write_text("system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max\n"
                       "overlap-bench,phase2,overlap,1,1,1,1,1,1,1\n")
    path = folder / "run.meta.json"
    path.write_text(json.dumps(meta))
    for read in (lambda: ob_csv.read_metadata(summary), lambda: rerun.rerun_command(summary),
                 lambda: with_nccl_env.nccl_environment(path)):
        try:
            read()
        except ob_tool.UsageError as error:
            assert "\n" not in str(error) and str(path.name) in str(error), str(error)


@LIMITS
@given(spec=either("experiment"))
def test_an_experiment_is_loaded_and_planned_or_refused_in_one_line(tmp_path, spec):
    path = tmp_path / "headline.toml"
    path.write_text(strategies.toml_text(spec))
    try:
        loaded = headline.load_experiment(path)
    except ob_tool.UsageError as error:
        refused(error, path)
        return
    headline.plan(loaded, 2, tmp_path / "build", tmp_path / "out")


@LIMITS
@given(part=either("part"), named=st.booleans(), gpus=st.integers(0, 8))
def test_a_benchmark_part_is_resolved_or_refused_in_one_line(tmp_path, part, named, gpus):
    folder = fresh(tmp_path, "bench")
    if named and isinstance(part, dict):
        part["part"] = "demo"
    path = folder / "demo.toml"
    path.write_text(strategies.toml_text(part))
    (tmp_path / "bench.toml").write_text('parts = ["demo"]\n')
    values = {"gpus": str(gpus), "out": "out", "build": "build", "root": ".", "mpi": "mpirun -np 2",
              "configs": "4096x16x512", "sanitizer": "", **{b: f"build/{b}" for b in bench_parts.BINARIES}}
    try:
        parts = bench_parts.load_parts(folder)
        bench_parts.resolve(parts, ["demo"], values, ["4096,16,512"], gpus)
    except ob_tool.UsageError as error:
        assert "\n" not in str(error)


def test_the_strategies_draw_what_the_schemas_accept():
    """The generator and the validator agree: a drawn valid value passes the loader's check but for the suite's own
    relations (ordered, sameLength, ascending, names), which hypothesis-jsonschema does not know (else the fuzzing above
    would test only refusals)."""
    from overlap_bench.core import validate

    for kind in validate.KINDS:
        @settings(max_examples=5, deadline=None, database=None, phases=PHASES, suppress_health_check=list(HealthCheck))
        @given(strategies.valid(kind))
        def accepted(value):
            try:
                validate.check(value, kind, "drawn")
            except ob_tool.UsageError as error:
                assert any(w in str(error) for w in ("does not hold", "need one length", "must ascend",
                                                     "must name the")), str(error)
        accepted()


def test_the_schemas_are_all_fuzzed():
    from overlap_bench.core import validate

    here = pathlib.Path(__file__).read_text()  # parts: through load_parts; probe_tune: the probe's "tune" above
    assert all(f'"{kind}"' in here for kind in validate.KINDS if kind not in ("parts", "probe_tune"))
