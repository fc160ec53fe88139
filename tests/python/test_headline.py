"""The headline in one call (issue 49): the experiment file read and checked, the commands it plans (one phase 4,
one DDP and one FSDP2 process a round; a calibration per configuration), the contenders' selections on the columns
those processes write, and the tables, sentences and figure made from a finished comparison (the before/after gate:
test_gate.py)."""
import json
import math
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from conftest import REPO, tool
from overlap_bench.compare import headline
from overlap_bench.compare import headline_tables

FAKE = REPO / "tests" / "support" / "fake_headline.py"
EXPERIMENT = REPO / "experiments" / "headline.toml"
CONFIGS = ["4096x16x512", "1024x32x256"]


def spec(**changes):
    base = headline.load_experiment(EXPERIMENT)
    base.update({"configs": CONFIGS, "strategies": ["nccl", "ce"], "planned_syncs": ["nccl", "ce"],
                 "ddp_caps_mb": [25, 64], "baseline": "ddp-25,ddp-64", "rounds": 2, "passes": 1, "graph": False,
                 "ddp_graph": False}, **changes)
    return base


def test_the_published_experiment_is_the_issue_s():
    experiment = headline.load_experiment(EXPERIMENT)
    assert len(experiment["configs"]) == 6 and experiment["rounds"] >= 3
    # issue 74: the carry schedule among the contenders and in the planner's choice
    assert experiment["strategies"] == ["nccl", "nccl-sym", "ce", "sharded", "sharded-ce", "nccl-carry"]
    assert experiment["planned_syncs"] == ["nccl", "ce", "sharded-ce", "nccl-carry"]
    assert experiment["ddp_caps_mb"] == [25, 64, 128, 256] and experiment["fsdp2"]
    # both sides replayed from CUDA graphs, as README's headline was made (results/4xH200/headline-85378b9)
    assert experiment["graph"] and experiment["ddp_graph"] and experiment["passes"] == 1


def test_one_process_per_system_and_a_calibration_per_configuration(tmp_path):
    calibrations, args = headline.plan(spec(), 4, tmp_path / "build", tmp_path / "out")
    assert [c for c, _, _ in calibrations] == CONFIGS
    assert "--calibrate --plan-syncs nccl,ce" in calibrations[0][1] and "-np 4" in calibrations[0][1]
    processes = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--process")
    assert list(processes) == ["p4", "ddp", "fsdp2"]
    p4 = processes["p4"]
    assert "--sweep shape=4096x16x512,1024x32x256 --sweep sync=nccl,ce --sweep plan=caps,auto" in p4
    assert p4.count("--calibration ") == 2 and "--order-seed {seed}" in p4
    assert "--bucket-mb 25 64" in processes["ddp"] and "--no-isolated" in processes["ddp"]
    assert "--fsdp --reshard-after-forward 0" in processes["fsdp2"]
    contenders = [args[i + 1] for i, a in enumerate(args) if a == "--contender"]
    assert len(contenders) == 2 * (2 + 1 + 2 + 1)
    assert "nccl@4096x16x512=@p4[hidden=4096,layers=16,batch=512,sync=nccl,plan=caps]" in contenders
    assert "planned@1024x32x256=@p4[hidden=1024,layers=32,batch=256,plan=auto]" in contenders
    assert "ddp-64@1024x32x256=@ddp[hidden=1024,layers=32,batch=256,bucket_mb=64]" in contenders
    # the minimum time per mode, where the experiment sets one, reaches phase 4 and both PyTorch processes alike
    assert not any("--min-time-ms" in a for a in args)
    _, args = headline.plan(spec(min_time_ms=150), 4, tmp_path / "build", tmp_path / "out")
    processes = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--process")
    assert all(" --min-time-ms 150 " in p for p in processes.values())
    # the modes in turn, where the experiment asks for passes: phase 4's, both PyTorch processes', the
    # calibration's (at most its 3 iterations)
    calibrations, args = headline.plan(spec(passes=1), 4, tmp_path / "build", tmp_path / "out")
    assert not any("--passes" in a for a in args) and "--passes" not in calibrations[0][1]
    calibrations, args = headline.plan(spec(passes=4), 4, tmp_path / "build", tmp_path / "out")
    processes = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--process")
    assert all(" --passes 4 " in p for p in processes.values()) and " --passes 3 " in calibrations[0][1]
    # CUDA graphs, where the experiment asks for them: phase 4's steps and its calibration's, not PyTorch's
    assert not any("--graph" in a for a in args)
    calibrations, args = headline.plan(spec(graph=True), 4, tmp_path / "build", tmp_path / "out")
    processes = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--process")
    assert " --graph " in processes["p4"] and " --graph " in calibrations[0][1]
    assert "--graph" not in processes["ddp"] + processes["fsdp2"]
    # DDP's steps too, where the experiment asks (bench_ddp.py --graph), never FSDP2's nor the calibration's
    calibrations, args = headline.plan(spec(ddp_graph=True), 4, tmp_path / "build", tmp_path / "out")
    processes = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--process")
    assert " --graph " in processes["ddp"] and "--graph" not in processes["fsdp2"] + processes["p4"]
    assert "--graph" not in calibrations[0][1]


def test_several_caps_make_a_contender_each_and_the_planner_s_experiment_reads():
    calibrations, args = headline.plan(spec(caps_mb=[25, 256]), 4, REPO / "build", REPO / "out")
    processes = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--process")
    assert "--sweep sync=nccl,ce --sweep bucket-mb=25,256 --sweep plan=caps,auto" in processes["p4"]
    contenders = [args[i + 1] for i, a in enumerate(args) if a == "--contender"]
    assert "ce-256@4096x16x512=@p4[hidden=4096,layers=16,batch=512,sync=ce,plan=caps,bucket_mb=256]" in contenders
    assert "planned@4096x16x512=@p4[hidden=4096,layers=16,batch=512,plan=auto]" in contenders
    assert len(contenders) == 2 * (2 * 2 + 1 + 2 + 1)
    planner = headline.load_experiment(REPO / "experiments" / "planner.toml")
    assert "sharded-ce" in planner["planned_syncs"] and planner["caps_mb"] == [25, 64, 256]


@pytest.mark.parametrize("text, key", [("caps_mb = [0]", "caps_mb"), ("rounds = 1", "rounds"),
                                       ("configs = ['4096x16']", "configs"),
                                       ("fsdp2 = 1", "fsdp2"), ("ddp_caps_mb = [0]", "ddp_caps_mb"),
                                       ("iters = 'many'", "iters"), ("strategies = ['a b']", "strategies"),
                                       ("min_time_ms = -1", "min_time_ms"), ("passes = 13", "passes"),
                                       ("graph = 1", "graph"), ("ddp_graph = 'yes'", "ddp_graph")])
def test_a_bad_experiment_file_is_named(tmp_path, text, key):
    lines = [line for line in EXPERIMENT.read_text().splitlines() if not line.startswith(text.split()[0])]
    path = tmp_path / "bad.toml"
    path.write_text("\n".join(lines + [text]) + "\n")
    result = subprocess.run([*tool("headline.py"), "--experiment", path, "--dry-run",
                             "--out", tmp_path / "o"], capture_output=True, text=True)
    assert result.returncode == 2 and f"'{key}'" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "o").exists()


def fake_compare(tmp_path, rounds=2):
    """ob-compare on the headline's contenders, the three processes replaced by fake_headline.py."""
    _, args = headline.plan(spec(rounds=rounds), 2, tmp_path / "build", tmp_path)
    configs = ",".join(CONFIGS)
    fakes = {"p4": "--kind p4 --syncs nccl,ce", "ddp": "--kind ddp --caps 25,64", "fsdp2": "--kind fsdp2"}
    for i, arg in enumerate(args):
        if arg == "--process":
            name = args[i + 1].split("=", 1)[0]
            args[i + 1] = f"{name}={sys.executable} {FAKE} {fakes[name]} --configs {configs} --csv {{csv}}"
    from overlap_bench.compare import compare

    assert compare.main(args + ["--out", str(tmp_path / "compare"), "--seed", "5"]) == 0
    return tmp_path / "compare"


def test_the_tables_from_a_finished_comparison(tmp_path, capsys):
    folder = fake_compare(tmp_path)
    assert headline_tables.write(folder, tmp_path, spec(), {"wall_s": 12.0}) == 0
    table = pd.read_csv(tmp_path / "headline.csv").set_index("config")
    first = table.loc["4096x16x512"]
    # the fastest phase 4 contender (ce: 0.8 of the base) against DDP's faster cap (64: 1.05 of the base)
    assert first["best"] == "ce" and first["ddp_pick"] == "ddp-64@4096x16x512"
    assert math.isclose(first["best_vs_ddp"], 0.8 / 1.05, rel_tol=0.03) and first["verdict"] == "faster"
    # compute-only: 0.6 against DDP's 0.7; overhead: 0.8/0.6 against 1.05/0.7
    assert math.isclose(first["compute_ratio"], 0.6 / 0.7, rel_tol=0.03)
    assert math.isclose(first["overhead_ratio"], (0.8 / 0.6) / (1.05 / 0.7), rel_tol=0.03)
    # the floor: max(its compute-only 0.6, the fastest comm-only 0.5) of the base
    assert math.isclose(first["floor_ms"], 6.0, rel_tol=0.03)
    assert math.isclose(first["best_vs_floor"], 8 / 6, rel_tol=0.03)
    # why it misses the floor: its own point's bound (0.9 of its step, joined by the step's round median) against
    # the floor, and its step against that bound
    assert first["best_bound_kind"] == "bound" and math.isclose(first["best_bound_ms"], 0.9 * 8, rel_tol=0.06)
    assert math.isclose(first["bound_vs_floor"], 0.9 * 8 / 6, rel_tol=0.06)
    assert math.isclose(first["best_vs_bound"], 1 / 0.9, rel_tol=0.06)
    assert first["planned_sync"] == "ce" and first["planned_buckets"] == 5
    assert math.isclose(first["planned_vs_best_strategy"], 0.82 / 0.8, rel_tol=0.03)
    # its interval over resampled rounds, the fastest fixed plan chosen again in each, holds the ratio
    assert first["planned_vs_best_strategy_lo"] <= first["planned_vs_best_strategy"] <= \
        first["planned_vs_best_strategy_hi"]
    assert math.isclose(first["fsdp2_vs_ddp"], 1.2 / 1.05, rel_tol=0.03)
    assert first["beats_compute"] == 0 and first["bounds_above"] == 0
    contenders = pd.read_csv(tmp_path / "headline.contenders.csv")
    assert len(contenders) == 2 * 6 and set(contenders["config"]) == set(CONFIGS)
    # every point's bound row beside its step, in every round: 2 configurations x 2 strategies x 2 rounds (the fake
    # planned plan writes none), each at 0.9 of its step (the fake's rounds move it a little), none above it
    bounds = pd.read_csv(tmp_path / "bounds.csv")
    assert len(bounds) == 8 and set(bounds["config"]) == set(CONFIGS) and set(bounds["round"]) == {0, 1}
    assert set(bounds["sync"]) == {"nccl", "ce"} and (bounds["bound_kind"] == "bound").all()
    assert bounds["bound_over_step"].between(0.85, 0.95).all()
    assert bounds["above"].sum() == table["bounds_above"].sum() == 0
    meta = json.loads((tmp_path / "headline.meta.json").read_text())
    assert meta["wall_s"] == 12.0 and meta["rows"] == 10 and meta["rounds"] == 2
    out = capsys.readouterr().out
    assert "4096x16x512: ce is faster than DDP at its best cap (ddp-64@4096x16x512) by 2" in out
    assert "the planner's plan (ce, 5 buckets)" in out and "x [" in out.split("the planner's plan")[1]
    assert re.search(r"x its floor \(its schedule's bound 1\.1\d\dx\)", out)
    assert (tmp_path / "headline.png").stat().st_size > 5000
    # DDP's runs replayed from CUDA graphs (bench_ddp.py --graph: its summary's graph column): the table and the
    # sentence say so; eager (no such column, or 0) they say nothing
    assert (table["ddp_graph"] == 0).all()
    ddp = folder / "runs" / "r0-ddp.csv"
    pd.read_csv(ddp).assign(graph=1).to_csv(ddp, index=False)
    assert headline_tables.write(folder, tmp_path / "graphed", spec(), {"wall_s": 12.0}) == 0
    assert (pd.read_csv(tmp_path / "graphed" / "headline.csv")["ddp_graph"] == 1).all()
    assert "ce is faster than DDP replayed from CUDA graphs at its best cap" in capsys.readouterr().out


def test_a_bound_is_above_its_step_only_beyond_both_intervals():
    """The bound is made of the compute-only and comm-only medians: it carries their interval (phase 4's rule). A
    bound 12 % above the step's median from a compute-only run whose median moves +-12.5 % is not above it; the same
    bound from steady inputs is; a schedule model (bound_kind model) never counts."""
    def point(compute_spread, kind="bound", bound_ms=1.975):
        return pd.DataFrame({"mode": ["compute", "comm", "overlap", "bound"],
                             "time_ms_p50": [1.895, 0.698, 1.766, bound_ms],
                             "time_ms_p50_ci_rel": [compute_spread, 0.007, 0.0024, math.nan],
                             "bound_kind": [math.nan, math.nan, math.nan, kind]})

    assert not headline_tables.bound_above(point(0.125))
    assert headline_tables.bound_above(point(0.003))
    assert not headline_tables.bound_above(point(0.003, kind="model"))
    assert not headline_tables.bound_above(point(0.003, bound_ms=1.70))
    assert not headline_tables.bound_above(point(0.003).iloc[:3])  # no bound row
    # phase 4 writes the bound's spread itself (time_ms_p50_ci_rel of the bound row): read, not recomputed
    written = point(0.003)
    written.loc[3, "time_ms_p50_ci_rel"] = 0.125
    assert not headline_tables.bound_above(written)


def test_analyze_remakes_the_tables_without_running(tmp_path):
    fake_compare(tmp_path / "call")
    result = subprocess.run([*tool("headline.py"), "--analyze", tmp_path / "call",
                             "--out", tmp_path / "again", "--experiment", write_spec(tmp_path)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "again" / "headline.csv").is_file() and "its floor" in result.stdout
    analyzed = json.loads((tmp_path / "again" / "headline.meta.json").read_text())["analyzed"]
    assert analyzed["commit"] and "--analyze" in analyzed["command_line"]  # which commit remade the tables


def test_the_published_headline_is_remade_from_its_gzipped_runs(tmp_path):
    """A published comparison keeps its runs' CSVs gzipped (results/README.md, "Size"): --analyze reads them and
    remakes README's headline (results/4xH200/headline-85378b9), floors and planned plans included, to the published
    numbers, and draws why each best step misses its floor from the events it kept."""
    folder = REPO / "results" / "4xH200" / "headline-85378b9"
    assert not list((folder / "compare" / "runs").glob("*.csv"))  # only .csv.gz
    result = subprocess.run([*tool("headline.py"), "--analyze", folder, "--out", tmp_path / "again"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    again, published = (pd.read_csv(p / "headline.csv") for p in (tmp_path / "again", folder))
    numeric = published.select_dtypes("number").columns
    assert list(again["config"]) == list(published["config"])
    assert (again[numeric] - published[numeric]).abs().max().max() < 1e-9
    missed = published.loc[published["best_vs_floor"] > 1.05, "config"]
    assert len(missed) and all((tmp_path / "again" / f"why-{c}.png").stat().st_size > 20000 for c in missed)


def write_spec(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text("\n".join(f"{k} = {json.dumps(v)}" for k, v in spec().items()) + "\n")
    return path


def test_phase3_strategies_as_rows_of_one_process(tmp_path, phase3):
    """CPU contenders as CI runs them: one phase 3 process a round, its strategies' rows at two gradient sizes read
    as four contenders in two groups, each split into compute-only and overhead factors."""
    command = f"mpirun -np 2 --oversubscribe {phase3} --compute busy --threads 1 --grad-mb 1,2 --chunks 4 " \
              f"--iters 4 --warmup 1 -q --csv {{csv}}"
    out = tmp_path / "cmp"
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    args = [*tool("compare.py"), "--out", out, "--rounds", 2, "--seed", 1, "--process",
            f"p3={command}", "--baseline", "thread", *[a for g in ("1", "2") for m in ("thread", "nonblocking")
                                                        for a in ("--contender", f"{m}@{g}:{m}=@p3[grad_mb={g}]")]]
    result = subprocess.run(list(map(str, args)), capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(out / "compare.csv").set_index("contender")
    assert table.loc["nonblocking@2", "baseline"] == "thread@2" and len(table) == 4
    assert table["compute_ms"].notna().all() and table["overhead"].gt(0).all()
    assert sorted(p.name for p in (out / "runs").glob("r*-p3.csv")) == ["r0-p3.csv", "r1-p3.csv"]


def test_predictions_before_the_runs_with_bucket_times_measured_on_the_target(predictor, tmp_path):
    """--predict-from: per configuration, cap and strategy the step on --gpus ranks from another rank count's
    calibration, and the planner's plan; --comm-from: a strategy's comm-only sweep on those ranks replaces its scaled
    bucket times (the `comm` column names them); --comm-from without --predict-from exits 2."""
    from test_check_prediction import calibration

    calibrations = tmp_path / "cal"
    calibrations.mkdir()
    calibration(tmp_path).rename(calibrations / "1024x4x256.calibration.json")
    experiment = tmp_path / "e.toml"
    experiment.write_text('name = "t"\nrounds = 2\niters = 5\nconfigs = ["1024x4x256"]\nstrategies = ["nccl"]\n'
                          'caps_mb = [4]\nplanned_syncs = ["nccl"]\nddp_caps_mb = [25]\nfsdp2 = false\n'
                          'baseline = "ddp-25"\n')
    sweep = tmp_path / "comm4.csv"
    sweep.write_text("system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max,hidden,"
                     "layers,batch,bucket_mb,first_bucket_mb,buckets,grad_mb,sync\n" + "".join(
                         f"overlap-bench,phase4,comm,4,0,10,{ms},1,1,1,1024,4,256,{mb},1,{b},16,nccl\n"
                         for mb, b, ms in [(1, 16, 1.6), (4, 5, 1.2), (16, 2, 0.9)]))
    env = {**os.environ, "PATH": f"{predictor.parent}{os.pathsep}{os.environ['PATH']}"}

    def predictions(name, *extra):
        command = [*tool("headline.py"), "--experiment", str(experiment), "--gpus", "4", "--out", str(tmp_path / name),
                   "--predict-from", str(calibrations), *extra]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
        assert result.returncode == 0, result.stderr
        return pd.read_csv(tmp_path / name / "predictions.csv").set_index("label")

    scaled, measured = predictions("scaled"), predictions("measured", "--comm-from", str(sweep))
    assert list(scaled.index) == ["nccl", "planned"] and (scaled["ranks"] == 4).all()
    assert scaled["comm"].isna().all() and (measured["comm"] == "nccl@4:1=0.1,4=0.293333,16=0.853333").all()
    assert measured.loc["nccl", "predicted_ms"] != pytest.approx(scaled.loc["nccl", "predicted_ms"], rel=1e-3)
    alone = subprocess.run([*tool("headline.py"), "--out", str(tmp_path / "x"), "--comm-from", str(sweep)],
                           capture_output=True, text=True, timeout=60)
    assert alone.returncode == 2 and "--comm-from: needs --predict-from" in alone.stderr, alone.stderr


def test_configs_split_an_experiment_over_calls(tmp_path):
    """--configs: the experiment's configurations named run alone (each still calibrated and compared in its own
    rounds); one the experiment lacks, or named twice, exits 2."""
    base = [*tool("headline.py"), "--experiment", str(REPO / "experiments" / "planner.toml"), "--gpus", "4",
            "--build", str(tmp_path), "--dry-run"]
    result = subprocess.run(base + ["--out", str(tmp_path / "a"), "--configs", "4096x16x8192,1024x32x256"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    calibrated = [line.split(":")[0] for line in result.stdout.splitlines() if line.startswith("calibrate ")]
    assert calibrated == ["calibrate 4096x16x8192", "calibrate 1024x32x256"]
    assert "--sweep shape=4096x16x8192,1024x32x256 " in result.stdout
    for bad in ("4096x16x8192,9x9x9", "1024x32x256,1024x32x256"):
        result = subprocess.run(base + ["--out", str(tmp_path / "b"), "--configs", bad], capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 2 and f"--configs: '{bad}' is invalid" in result.stderr, result.stderr
