"""The probe (issue 72): its measured added time split by a synthetic trace whose parts are known (the parts scaled
to the measured total, the scale and the perturbation reported), the split's edge cases, a plain trace's words on
what it cannot know, a probe folder's bad inputs; and where torch is installed, a two-rank gloo DDP job on the CPU:
the state after a probed run equal bit for bit to the same job's own steps without the probe, and each bad use one
line with the model untouched."""
import importlib.util
import json
import math
import os
import subprocess
import sys

import pandas as pd
import pytest

from conftest import REPO
from overlap_bench.trace import probe_split
from test_analyze import analyze, kineto, two_steps

JOB = REPO / "tests" / "python" / "probe_job.py"


def probe_folder(folder, added=0.020, traced_step=0.066):
    """Two ranks' job traces: per step a GEMM alone (0-10 us), one beside an all-reduce (20-33 us; alone it takes
    10), the all-reduce 20-40 us (7 us exposed), a GEMM queued behind it from 45 us (launched at 1 us: the exposed
    7 us blocked it); their compute-only traces the three GEMMs alone. Traced: 7 us exposed + 3 us slowdown."""
    folder.mkdir()
    steps = [(0.0, 100.0), (1000.0, 1100.0)]
    for rank in (0, 1):
        job, alone = [], []
        for s in (0.0, 1000.0):
            job += [(s, 10, "gemm", "", 0), (s + 20, 13, "gemm", "", 0),
                    (s + 20, 20, "ncclDevKernel_AllReduce", "allreduce", 4 << 20), (s + 45, 10, "gemm", "", 0)]
            alone += [(s, 10, "gemm", "", 0), (s + 20, 10, "gemm", "", 0), (s + 45, 10, "gemm", "", 0)]
        kineto(folder / f"job.rank{rank}.trace.json", job, steps, rank=rank)
        kineto(folder / f"compute-only.rank{rank}.trace.json", alone, steps, rank=rank)
    probe = {"tool": "probe", "ranks": 2, "device": "Test GPU", "step_ms": 0.060, "compute_only_step_ms": 0.040,
             "added_ms": added, "added_ci_lo_ms": added - 0.002, "added_ci_hi_ms": added + 0.002,
             "traced_step_ms": traced_step, "replicas_agree": True}
    (folder / "probe.json").write_text(json.dumps(probe))
    return folder


def test_the_measured_total_is_split_by_the_trace_s_parts_scaled_to_it(tmp_path):
    folder = probe_folder(tmp_path / "probe")
    result = analyze(folder, "--out", tmp_path / "a")
    assert result.returncode == 0, result.stderr
    parts = pd.read_csv(tmp_path / "a" / "analysis.parts.csv").set_index("part")
    assert math.isclose(parts.loc["exposed communication", "traced_ms"], 0.007, abs_tol=1e-9)
    assert math.isclose(parts.loc["compute slowdown", "traced_ms"], 0.003, abs_tol=1e-9)
    assert math.isclose(parts.loc["blocking communication", "traced_ms"], 0.007, abs_tol=1e-9)
    assert parts.loc[["peer wait", "wrapper kernels", "host gaps"], "traced_ms"].abs().max() < 1e-9
    adds = parts[parts["adds"]]
    assert math.isclose(adds["scaled_ms"].sum(), 0.020, rel_tol=1e-9)  # the parts add up to the measured total
    assert math.isclose(parts.loc["exposed communication", "scaled_ms"], 0.014, rel_tol=1e-9)  # scaled by 2
    row = pd.read_csv(tmp_path / "a" / "analysis.csv").set_index("mode").loc["overlap"]
    assert math.isclose(row["probe_scale"], 2.0) and math.isclose(row["perturbation"], 1.1)
    assert math.isclose(row["measured_added_ms"], 0.020) and math.isclose(row["blocking_comm_ms"], 0.007)
    assert "added 0.020 ms a step [0.018, 0.022]" in result.stdout and "scaled by 2.000" in result.stdout
    assert "From the trace alone" not in result.stdout
    meta = json.loads((tmp_path / "a" / "analysis.meta.json").read_text())
    assert meta["probe"]["added_ms"] == 0.020 and len(meta["traces"]) == 4



def test_the_probe_s_own_split_needs_neither_jsonschema_nor_ijson(tmp_path):
    """The split the probe's finish() makes (result.analyse) on its folder's gzip traces, with jsonschema and ijson
    not importable (the GPU image has neither): the parts scaled to the result the probe holds in memory."""
    folder = probe_folder(tmp_path / "probe")
    for trace in folder.glob("*.trace.json"):
        subprocess.run(["gzip", str(trace)], check=True)
    code = ("import json, pathlib, sys\nfor m in ('jsonschema', 'ijson'): sys.modules[m] = None\n"
            "from overlap_bench.probe import result\n"
            f"folder = pathlib.Path({str(folder)!r})\n"
            "parts = result.analyse(folder, json.loads((folder / 'probe.json').read_text()))\n"
            "print(json.dumps({'error': parts.get('error'), 'scale': parts.get('scale')}))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.splitlines()[-1])
    assert outcome["error"] is None and math.isclose(outcome["scale"], 2.0)
    assert (folder / "analysis" / "analysis.parts.csv").is_file()


def test_the_table_never_writes_over_the_split_it_reads(tmp_path):
    """Issue 83: `ob-probe-table F --csv F/analysis/analysis.parts.csv` is refused (exit 2, one line naming --csv),
    the split it reads left as it was; a folder that does not exist is refused alike, before any work."""
    folder = probe_folder(tmp_path / "probe")
    assert analyze(folder, "--out", folder / "analysis").returncode == 0
    parts = folder / "analysis" / "analysis.parts.csv"
    before = parts.read_bytes()
    table = [sys.executable, "-m", "overlap_bench.trace.probe_split"]
    for argv, named in (([folder, "--csv", parts], "--csv"), ([tmp_path / "none", "--csv", tmp_path / "t.csv"],
                                                              "FOLDER")):
        result = subprocess.run([*table, *map(str, argv)], capture_output=True, text=True, cwd=REPO, timeout=120)
        assert result.returncode == 2 and named in result.stderr and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert parts.read_bytes() == before and not (tmp_path / "t.csv").exists()
    assert not (folder / "analysis" / "analysis.parts.meta.json").exists()
    made = subprocess.run([*table, str(folder), "--csv", str(tmp_path / "t.csv")], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert made.returncode == 0, made.stderr
    assert math.isclose(pd.read_csv(tmp_path / "t.csv")["exposed_ms"][0], 0.014, rel_tol=1e-9)

def test_the_split_s_edges():
    row = {"exposed_comm_ms": 0.5, "peer_wait_ms": 0.1, "slowdown_ms": 0.2, "wrapper_gpu_ms": 0.0,
           "host_comm_ms": 0.05, "idle_added_ms": float("nan"), "blocking_comm_ms": 0.3}
    probe = {"added_ms": 1.5, "added_ci_lo_ms": 1.0, "added_ci_hi_ms": 2.0, "traced_step_ms": 11.0, "step_ms": 10.0}
    result = probe_split.split(row, probe)
    parts = {p["part"]: p for p in result["parts"]}
    assert math.isclose(result["traced_total_ms"], 0.75) and math.isclose(result["scale"], 2.0)
    assert math.isclose(parts["exposed communication"]["traced_ms"], 0.4)  # less the peer wait, counted apart
    assert math.isclose(sum(p["scaled_ms"] for p in result["parts"] if p["adds"]), 1.5)
    assert math.isclose(result["perturbation"], 1.1)
    nothing = probe_split.split(row, {**probe, "added_ms": -0.1})
    assert nothing["scale"] == 0 and "nothing to split" in probe_split.sentence(nothing)
    unseen = probe_split.split({k: 0.0 for k in row}, probe)
    assert math.isnan(unseen["scale"]) and "cannot say where" in probe_split.sentence(unseen)


def test_a_plain_trace_says_what_it_cannot_know(tmp_path):
    traces = [two_steps(tmp_path / f"r{rank}.json", rank=rank) for rank in (0, 1)]
    result = analyze(*traces, "--out", tmp_path / "a")
    assert result.returncode == 0, result.stderr
    assert "From the trace alone: no step of the job without the profiler" in result.stdout
    assert "no compute-only step" in result.stdout and "overlap_bench.probe" in result.stdout


@pytest.mark.parametrize("damage, message", [
    ("no probe.json", "a folder without a probe's result"),
    ("probe.json not JSON", "not a probe's result (not JSON"),
    ("a string for a number", "field 'added_ms': must be number (finite) (probe schema)"),
    ("no traces", "without its traces"),
])
def test_a_probe_folder_s_bad_inputs_are_one_line_and_exit_2(tmp_path, damage, message):
    folder = probe_folder(tmp_path / "probe")
    if damage == "no probe.json":
        (folder / "probe.json").unlink()
    elif damage == "probe.json not JSON":
        (folder / "probe.json").write_text("{")
    elif damage == "a string for a number":
        probe = json.loads((folder / "probe.json").read_text())
        (folder / "probe.json").write_text(json.dumps({**probe, "added_ms": "0.2"}))
    else:
        for path in folder.glob("job.rank*"):
            path.unlink()
    result = analyze(folder, "--out", tmp_path / "a")
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "a" / "analysis.csv").exists()


def torch_job(*args, timeout=300):
    """probe_job.py in a process of its own (torch is never imported here: a child forked from a process that
    holds it inherits its peak memory, which other tests measure); skipped without torch or gloo."""
    if importlib.util.find_spec("torch") is None:
        assert not os.environ.get("OB_REQUIRE_TORCH"), "torch was installed by the test command, yet not found"
        pytest.skip("torch is not installed")
    result = subprocess.run([sys.executable, str(JOB), *map(str, args)], capture_output=True, text=True,
                            timeout=timeout, env={**os.environ, "PYTHONPATH": str(REPO)})
    if result.returncode == 77:
        pytest.skip("torch without gloo")
    return result


JOBS = {  # the jobs the probe and its tuner run on the CPU (gloo, two ranks): the wrapper and probe_job.py's options
    "ddp": ["ddp"], "fsdp2": ["fsdp2"],
    "ddp-tune-accumulate": ["ddp", "--tune", "--accumulate", "2"],
    "ddp-tune-compile": ["ddp", "--tune", "--compile"],
    "fsdp2-tune": ["fsdp2", "--tune"],
    "fsdp2-tune-noreshard-accumulate": ["fsdp2", "--tune", "--no-reshard", "--accumulate", "2"],
}


@pytest.mark.parametrize("job", JOBS)
def test_a_probed_run_trains_exactly_as_the_job_s_own_steps(tmp_path, job):
    """Two ranks (gloo, CPU), BatchNorm's buffers, dropout's random numbers, AdamW, under DDP or FSDP2, with
    accumulation, torch.compile, FSDP2 with and without resharding: after the probe (and its tuner) the model and the
    optimizer's state equal bit for bit those of the same job's own steps on the batches they took, the replicas
    agree, the measurement took at most 40 steps and the tuner at most its budget, every setting it tried in
    tune.csv and its verdict in words."""
    wrapper, *options = JOBS[job]
    result = torch_job("both", tmp_path, wrapper, *options, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    assert lines["model equal"] == "True" and lines["optimizer equal"] == "True"
    steps, timed = map(int, lines["plan"].split())
    measured = json.loads((tmp_path / "probe" / "probe.json").read_text())
    assert measured["replicas_agree"] and measured["probe_steps"] == steps
    kinds = pd.read_csv(tmp_path / "probe" / "probe.csv")["kind"].value_counts()
    assert kinds["job"] == kinds["compute"] == timed
    assert measured["added_ci_lo_ms"] <= measured["added_ms"] <= measured["added_ci_hi_ms"]
    assert measured["backend"] == "gloo" and measured["clock"] == "host perf_counter"
    assert measured["wrapper"] == wrapper and measured["baseline"]
    assert ("hooks out" in measured["baseline"]) == (wrapper == "fsdp2")  # FSDP2's compute-only: a plain replica's
    assert measured["replicas_checked"] > 0 if wrapper == "ddp" else measured["replicas_checked"] == 0
    assert sorted(p.name for p in (tmp_path / "probe").glob("*.trace.json.gz")) == [
        "compute-only.rank0.trace.json.gz", "compute-only.rank1.trace.json.gz", "job.rank0.trace.json.gz",
        "job.rank1.trace.json.gz"]
    assert "nan" not in result.stdout.lower()
    if "--tune" not in options:
        assert steps <= 40 and "tune" not in measured and not (tmp_path / "probe" / "tune.csv").exists()
        return
    tuned = measured["tune"]
    assert steps - sum(1 for k in kinds.index for _ in range(kinds[k]) if k.startswith("tune")) <= 40
    assert tuned["steps"] == sum(kinds[k] for k in kinds.index if k.startswith("tune")) <= tuned["budget_steps"] == 200
    table = pd.read_csv(tmp_path / "probe" / "tune.csv")
    assert list(table["setting"]) == [row["setting"] for row in tuned["settings"]] and len(table) >= 2
    assert (table["ci_lo"] <= table["ratio"]).all() and (table["ratio"] <= table["ci_hi"]).all()
    assert (table["steps"] == table["rounds"] * 3).all() and tuned["rounds"] >= 2
    # screening: every setting its rounds; racing: the leading ones (at most two) the rest of the budget
    raced = table["setting"].isin(tuned["raced"])
    assert (table.loc[~raced, "rounds"] == tuned["rounds"]).all() and len(tuned["raced"]) <= 2
    assert (table.loc[raced, "rounds"] == tuned["rounds"] + tuned["race_rounds"]).all()
    assert tuned["race_rounds"] > 0 if len(table) > 2 and tuned["raced"] else tuned["race_rounds"] == 0
    assert table["best"].sum() == (tuned["best"] is not None)
    if wrapper == "ddp":
        assert all(s.startswith(("bucket_cap_mb=", "gradient_as_bucket_view=")) for s in table["setting"])
        assert "compile" not in job or all(float(s.split("=")[1]) >= 1 for s in table["setting"]
                                           if s.startswith("bucket"))
    else:
        assert any(s.startswith("forward prefetch") for s in table["setting"])
        assert any(s.startswith("reshard_after_forward") for s in table["setting"]) == ("noreshard" not in job)
    verdict = next(line for line in result.stdout.splitlines() if line.startswith("tune: "))
    assert ("Paste: " in verdict) == (tuned["best"] is not None) and ("keep yours" in verdict) != ("Paste" in verdict)


def test_each_bad_use_is_one_line_and_the_model_untouched(tmp_path):
    result = torch_job("bad", tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    assert "not wrapped for data parallelism" in lines["not wrapped"]
    assert lines["world of one"].startswith("a world of one rank")
    assert "entered inside another" in lines["entered twice"]
    assert lines["finish early"].startswith("finish() after 0 of the probe's")
    assert "a link or a file" in lines["out is a file"] and lines["untouched"] == "True"


def test_a_refusal_on_one_rank_and_a_failing_step_never_harm_the_job(tmp_path):
    """Two ranks (gloo): one rank's refusal is both ranks' (neither left waiting in a collective); the user's own step
    failing inside a compute-only step and inside a tuner's setting: the state put back, the job's own DDP routed back,
    the exception raised again."""
    result = torch_job("harm", tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stdout.splitlines() if line.startswith("rank ")]
    assert "a link or a file" in next(line for line in lines if line.startswith("rank 1 refused"))
    assert "another rank refused" in next(line for line in lines if line.startswith("rank 0 refused"))
    for rank in (0, 1):
        for fail in ("compute", "tune-warmup"):
            assert f"rank {rank} {fail} raised: the user's own step failed; state restored: True; routed back: " \
                   "True" in lines
