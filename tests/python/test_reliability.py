"""Issue 53's examples, each behaving as the project promises: exit 2 naming the problem, no traceback, no file
written, bounded in time and memory (the inputs that are not what they claim, the sizes refused up front, the
Python tools on malformed but plausible files)."""
import json
import os
import subprocess
import time

import pytest

from conftest import REPO, tool

CALIBRATION = REPO / "tests" / "data" / "planner-4096-16-512.calibration.json"  # results/2xH200/planner's
ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def run(*command, timeout=120):
    start = time.monotonic()
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=timeout, env=ENV)
    result.seconds = time.monotonic() - start
    return result


def refused(result, named):
    assert result.returncode == 2, (result.returncode, result.stderr[-500:])
    assert named in result.stderr and "Traceback" not in result.stderr, result.stderr[-500:]


def test_a_one_rank_calibration_is_refused_by_the_predictor(tmp_path, predictor):
    one = json.loads(CALIBRATION.read_text())
    one["ranks"] = 1
    (tmp_path / "one.json").write_text(json.dumps(one))
    refused(run(predictor, "--calibration", tmp_path / "one.json"), "2 or more ranks")


def test_a_bucket_cap_beyond_any_gradient_is_refused_up_front(tmp_path, predictor):
    refused(run(predictor, "--calibration", CALIBRATION, "--bucket-mb", "1e15"), "--bucket-mb")
    measured = tmp_path / "m.csv"
    measured.write_text("system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max,"
                        "hidden,layers,batch,bucket_mb,first_bucket_mb,plan,sync\n"
                        "x,phase4,overlap,2,1,5,9,9,9,9,4096,16,512,1e15,1,caps,nccl\n")
    result = run(*tool("check_prediction.py"), "--calibrations", CALIBRATION, "--measured",
                 measured, "--predictor", predictor, "--csv", tmp_path / "out.csv")
    refused(result, "bucket_mb")
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("option", ["--model", "--calibration"])
def test_dev_zero_is_never_read(build_dir, predictor, option):
    for binary in (build_dir / "phase4_chunked_nccl" / "phase4_chunked_nccl", predictor):
        if not binary.exists():
            continue
        args = [binary, option, "/dev/zero"] + (["--calibration", CALIBRATION] if binary == predictor and
                                                  option == "--model" else [])
        result = run(*args, timeout=30)
        refused(result, "a regular file")
        assert result.seconds < 20
    scripts = {"--model": [*tool("bench_ddp.py"), "--model", "/dev/zero", "--csv", "x.csv"],
               "--calibration": [*tool("predict.py"), "/dev/zero", "--csv", "x.csv"]}
    refused(run(*scripts[option], timeout=60), "a regular file")


def test_a_model_type_that_is_a_number_is_a_usage_error(tmp_path, build_dir):
    config = json.loads((REPO / "tests/data/models/llama3-8b.config.json").read_text())
    config["model_type"] = 5
    (tmp_path / "c.json").write_text(json.dumps(config))
    model = build_dir / "phase4_chunked_nccl" / "phase4_model"
    if model.exists():
        refused(run(model, "--model", tmp_path / "c.json"), "wrong type")
        refused(run(*tool("bench_ddp.py"), "--model", tmp_path / "c.json", "--csv",
                    tmp_path / "x.csv", "--model-binary", model), "wrong type")


def test_a_4096_block_model_is_predicted_in_bounded_time(tmp_path, predictor):
    config = json.loads((REPO / "tests/data/models/gpt2.config.json").read_text())
    config["n_layer"] = 4096
    (tmp_path / "big.json").write_text(json.dumps(config))
    result = run(predictor, "--calibration", CALIBRATION, "--model", tmp_path / "big.json", "--ranks", "2,8",
                 "--links", "ib400", timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.seconds < 120, result.seconds


def test_verdict_reads_a_summary_without_seq_and_with_text_in_numbers(tmp_path):
    (tmp_path / "a.csv").write_text(
        "system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max,speedup,speedup_ci_lo,"
        "speedup_ci_hi,overlap_efficiency,overlap_pct,overlap_pct_ci_lo,overlap_pct_ci_hi\n"
        "x,phase2,overlap,1,4,5,2,2,2,2,0.5,0.4,0.6,abc,10,zz,5\n")
    result = run(*tool("verdict.py"), tmp_path / "a.csv")
    assert result.returncode == 0 and "Traceback" not in result.stderr and "slower than sequential" in result.stdout


def test_report_refuses_a_bad_comparison_before_drawing_anything(tmp_path):
    (tmp_path / "compare.csv").write_text("contender,baseline_pick,median_ms,median_ci_rel,ratio,ratio_ci_lo,"
                                          "ratio_ci_hi,verdict,baseline,rounds,unstable\n"
                                          "a,b,1,0.1,fast,0.9,1.1,faster,b,3,0\n")
    (tmp_path / "s.csv").write_text("system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,"
                                    "time_ms_max\nx,phase2,seq,1,4,5,2,2,2,2\n")
    refused(run(*tool("report.py"), tmp_path), "ratio")
    assert not (tmp_path / "figures").exists() and not (tmp_path / "report.md").exists()


def test_sizes_refused_before_any_work(tmp_path, build_dir, phase3):
    phase2 = build_dir / "phase2_omp_overlap" / "phase2_omp_overlap"
    if phase2.exists():
        # a step of 60 s x 1000 chunks: refused as longer than --timeout-s lets a step run (before the hour cap)
        refused(run(phase2, "--compute-ms", "60000", "--chunks", "1000", "--csv", tmp_path / "a.csv"), "--timeout-s")
    start = time.monotonic()
    refused(run("mpirun", "-np", "2", "--oversubscribe", phase3, "--batch", "auto", "--grad-mb", "2048", "--in",
                "1024", "--csv", tmp_path / "b.csv"), "--grad-mb")
    assert time.monotonic() - start < 60
    refused(run("mpirun", "-np", "1", "--oversubscribe", phase3, "--compute", "busy", "--busy-us", "1e7", "--chunks",
                "10", "--iters", "1000", "--timeout-s", "86400", "--csv", tmp_path / "c.csv"), "hours")
    assert not list(tmp_path.iterdir())
