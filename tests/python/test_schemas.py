"""Every structured input through its declared schema (issue 83, overlap_bench/core/schemas/, validate.py): every file
the repository ships or publishes (experiments/, results/ loose and packed, tests/data) validates against its kind's
schema; a violation of a type, a range or a relation is refused by the one loader before any number is used, in one
line naming the file, the field and the rule (exit 2 from a tool); the schemas ship in the package."""
import json
import pathlib
import shutil
import subprocess

import pytest

from conftest import REPO, tool
from overlap_bench.core import inputs, ob_tool, packs, validate

# (kind, where its files are, the pattern of their names)
PUBLISHED = [("probe", "probe.json"), ("truth", "truth.json"), ("calibration", "*.calibration.json"),
             ("meta", "*.meta.json")]
ROOTS = ("experiments", "results", "tests/data")


def published(pattern):
    return [p for root in ROOTS for p in packs.rglob(REPO / root, pattern)]


@pytest.mark.parametrize("kind,pattern", PUBLISHED)
def test_every_published_file_validates_against_its_schema(kind, pattern):
    found = published(pattern)
    assert found, f"no {pattern} under {', '.join(ROOTS)}"
    failures = []
    for path in found:
        try:
            packs.read_json(path, "FILE", 64 << 20, schema=kind)
        except ob_tool.UsageError as error:
            failures.append(str(error))
    assert not failures, "\n".join(failures)


def test_every_experiment_validates_against_its_schema():
    kinds = {"bench.toml": "parts"}
    files = sorted((REPO / "experiments").glob("*.toml")) + sorted((REPO / "experiments" / "bench").glob("*.toml"))
    assert len(files) > 5
    for path in files:
        kind = "part" if path.parent.name == "bench" else kinds.get(path.name, "experiment")
        validate.check(ob_tool.load_toml(path, "--experiment"), kind, f"--experiment: '{path}' is invalid")


def probe_folder(tmp_path):
    source = REPO / "results" / "cpu-2core" / "probe-tune" / "ddp-25mb"
    folder = tmp_path / "job"
    folder.mkdir()
    for name in ("probe.json", "truth.json"):
        (folder / name).write_bytes(packs.read_bytes(source / name))
    return folder


BROKEN = [  # (file, change, the field and rule the line must name)
    ("probe.json", {"step_ms": -1.0}, "field 'step_ms': must be > 0"),
    ("probe.json", {"step_ms": "275"}, "field 'step_ms': must be number"),
    ("probe.json", {"added_ms": 1e6}, "'added_ms' <= 'added_ci_hi_ms' does not hold"),
    ("probe.json", {"replicas_agree": "false"}, "field 'replicas_agree': must be boolean"),
    ("probe.json", {"steps": [{"kind": "probe", "ms": -3}]}, "field 'steps[0].ms': must be >= 0"),
    ("truth.json", {"within_5pct": 1}, "field 'within_5pct': must be boolean"),
    ("truth.json", {"truth_ci_lo_ms": 1e5}, "'truth_ci_lo_ms' <= 'truth_added_ms' does not hold"),
    ("truth.json", {"truth_step_ms": None}, "field 'truth_step_ms': must be number"),
]


@pytest.mark.parametrize("name,change,said", BROKEN, ids=[f"{n}:{next(iter(c))}" for n, c, _ in BROKEN])
def test_a_broken_field_is_one_line_naming_file_field_and_rule(tmp_path, name, change, said):
    folder = probe_folder(tmp_path)
    value = json.loads((folder / name).read_text())
    value.update(change)
    (folder / name).write_text(json.dumps(value))
    result = subprocess.run(tool("probe_split") + [str(folder), "--csv", str(tmp_path / "table.csv")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0] and str(folder / name) in lines[0], lines
    assert "Traceback" not in result.stderr and not (tmp_path / "table.csv").exists()


def test_a_calibration_is_checked_before_any_number_is_used(tmp_path):
    calibration = json.loads((REPO / "tests/data/planner-4096-16-512.calibration.json").read_text())
    calibration["compute"]["step_ms"] = calibration["compute"]["step_ms"][:3]
    path = tmp_path / "c.calibration.json"
    path.write_text(json.dumps(calibration))
    with pytest.raises(ob_tool.UsageError, match=r"compute/step_ms and model/layers need one length"):
        inputs.load_json(path, "--calibration", schema="calibration")
    calibration = json.loads((REPO / "tests/data/planner-4096-16-512.calibration.json").read_text())
    calibration["strategies"][0]["bytes"].reverse()
    path.write_text(json.dumps(calibration))
    with pytest.raises(ob_tool.UsageError, match=r"field 'strategies\[0\].bytes': must ascend"):
        packs.read_json(path, "--calibration", schema="calibration")


@pytest.mark.parametrize("text,said", [
    ('name = "x"\nrounds = 3\niters = 12\nstrategies = []\nplanned_syncs = []\nddp_caps_mb = [25]\nfsdp2 = "yes"\n'
     'baseline = "ddp-25"\n', "field 'fsdp2': must be boolean"),
    ('name = "x"\nrounds = nan\niters = 12\nstrategies = []\nplanned_syncs = []\nddp_caps_mb = [25]\nfsdp2 = true\n'
     'baseline = "ddp-25"\n', "field 'rounds': must be integer"),
    ('name = "x"\nrounds = 3\niters = 2\npasses = 3\nstrategies = []\nplanned_syncs = []\nddp_caps_mb = [25]\n'
     'fsdp2 = true\nbaseline = "ddp-25"\n', "'passes' <= 'iters' does not hold"),
    ('name = "x"\nrounds = 3\niters = 12\nstrategies = []\nplanned_syncs = []\nddp_caps_mb = [25]\nfsdp2 = true\n'
     'baseline = "ddp-25"\ngrpah = true\n', "unknown key 'grpah'"),
])
def test_an_experiment_is_checked_in_its_loader(tmp_path, text, said):
    path = tmp_path / "e.toml"
    path.write_text(text)
    with pytest.raises(ob_tool.UsageError) as raised:
        validate.check(ob_tool.load_toml(path, "--experiment"), "experiment", f"--experiment: '{path}' is invalid")
    assert said in str(raised.value) and str(path) in str(raised.value) and "\n" not in str(raised.value)


def test_metadata_is_checked_by_the_tools_that_read_it(tmp_path):
    meta = tmp_path / "run.meta.json"
    meta.write_text(json.dumps({"suite": "overlap-bench", "environment": {"NCCL_ALGO": 4}}))
    result = subprocess.run(tool("with_nccl_env") + [str(meta), "true"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "field 'environment.NCCL_ALGO': must be string" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_number_is_finite_and_never_a_boolean():
    for value in (float("nan"), float("inf"), True):
        with pytest.raises(ob_tool.UsageError, match="must be number"):
            validate.check({"truth_step_ms": value, "truth_compute_ms": 1, "truth_added_ms": 0,
                            "truth_ci_lo_ms": 0, "truth_ci_hi_ms": 0}, "truth", "F")


def test_the_schemas_ship_in_the_package():
    """conftest.py imports overlap_bench from its pip-installed copy: the schemas must be package data there."""
    installed = pathlib.Path(validate.__file__).with_name("schemas")
    shipped = sorted(p.name for p in (REPO / "overlap_bench" / "core" / "schemas").glob("*.json"))
    assert sorted(p.name for p in installed.glob("*.json")) == shipped
    assert set(shipped) == {f"{k}.schema.json" for k in ("common", *validate.KINDS)}
    assert shutil.which("true")
