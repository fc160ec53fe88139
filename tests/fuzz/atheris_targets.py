"""Coverage-guided fuzzing of the Python readers (issue 83) with atheris (libFuzzer for Python): each target feeds the
fuzzer's bytes to one reader as its file, and lets through only the refusals the suite makes (a UsageError, or
probe_split's ValueError, of one line); any other exception is a crash that atheris reports with its input.

  python3 tests/fuzz/atheris_targets.py TARGET CORPUS_DIR [libFuzzer options: -max_total_time=20 ...]

TARGET: json (a probe, truth, calibration or metadata file through the one JSON loader and its schema, then its
reader), csv (a summary and a timeline through ob_csv), trace (a Kineto trace through the Python reader and the step
statistics), toml (an experiment and a benchmark part through their loaders). test_fuzz_atheris.py runs each."""
import os
import pathlib
import sys
import tempfile

import warnings

import atheris

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

with atheris.instrument_imports(include=["overlap_bench"]):
    from overlap_bench.compare import bench_parts, headline
    from overlap_bench.core import inputs, ob_csv, ob_tool, validate
    from overlap_bench.planner import check_prediction
    from overlap_bench.trace import probe_split, trace_read, trace_stats

SCRATCH = pathlib.Path(tempfile.mkdtemp(prefix="ob-atheris-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))


def refused(error):
    """A refusal the suite makes: one line."""
    if "\n" in str(error):
        raise AssertionError(f"a refusal of more than one line: {str(error)!r}")


def one_json(data):
    path = SCRATCH / "input.json"
    path.write_bytes(data)
    for kind in ("probe", "truth", "calibration", "meta"):
        try:
            inputs.load_json(path, "FILE", schema=kind)
        except ob_tool.UsageError as error:
            refused(error)
    folder = SCRATCH / "job"
    folder.mkdir(exist_ok=True)
    (folder / "probe.json").write_bytes(data)
    (folder / "truth.json").write_bytes(data)
    try:
        row, probe = probe_split.table_row(folder)
        probe_split.sentence(probe_split.split({"exposed_comm_ms": 1.0, "slowdown_ms": 0.5}, probe))
    except ValueError as error:
        refused(error)
    try:
        check_prediction.calibrations_by_model([path])
    except ob_tool.UsageError as error:
        refused(error)


def one_csv(data):
    for name, load in (("run.csv", ob_csv.load_summary), ("run.timeline.csv", ob_csv.load_timeline)):
        path = SCRATCH / name
        path.write_bytes(data)
        try:
            frame = load(path)
            ob_csv.config_columns(frame) if name == "run.csv" else ob_csv.timeline_points(frame)
        except ob_tool.UsageError as error:
            refused(error)


def one_trace(data):
    path = SCRATCH / "rank0.trace.json"
    path.write_bytes(data)
    try:
        rank = trace_read.read_kineto(path)
        for step in trace_stats.step_stats(rank):
            float(step.step_ms)
    except ob_tool.UsageError as error:
        refused(error)


def one_toml(data):
    folder = SCRATCH / "bench"
    folder.mkdir(exist_ok=True)
    (SCRATCH / "bench.toml").write_text('parts = ["demo"]\n')
    (folder / "demo.toml").write_bytes(data)
    (SCRATCH / "headline.toml").write_bytes(data)
    for load in (lambda: headline.load_experiment(SCRATCH / "headline.toml"),
                 lambda: bench_parts.load_parts(folder)):
        try:
            load()
        except ob_tool.UsageError as error:
            refused(error)


TARGETS = {"json": one_json, "csv": one_csv, "trace": one_trace, "toml": one_toml}


def main():
    target = TARGETS[sys.argv[1]]
    warnings.simplefilter("ignore")  # pandas' ParserWarning on a ragged row: the reader's answer is what counts
    validate.schema("probe")  # loaded before the first input, not timed as part of one
    atheris.Setup([sys.argv[0]] + sys.argv[2:], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
