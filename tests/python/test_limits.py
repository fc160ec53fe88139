"""Memory bounded by the work asked for (issue 37, class 3): a plan of more buckets, or a run of more timeline events,
than fit is refused up front with the limit named (exit 2, one line), and fast, under a small address-space limit."""
import resource
import subprocess

import pytest

from conftest import built
from test_predict import calibration

LIMIT = 2 << 30  # 2 GiB of address space: the refused requests would have needed far more


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def refused(command, option, words):
    result = subprocess.run(list(map(str, command)), capture_output=True, text=True, timeout=60, preexec_fn=limited)
    assert result.returncode == 2, result.stderr
    assert option in result.stderr and words in result.stderr, result.stderr
    return result


@pytest.mark.parametrize("args", [["--bucket-mb", "1e-6"], ["--sweep", "bucket-mb=25,1e-5"],
                                  ["--first-bucket-mb", "1e-6"]])
def test_bad_invocation_of_phase4_bucket_caps(build_dir, args):
    """More buckets than a plan may hold: refused up front, the limit named."""
    phase4 = built(build_dir, "phase4_chunked_nccl/phase4_chunked_nccl")
    refused([phase4, *args], "bucket-mb", "at most 65536 buckets")


def test_phase4_predict_refuses_one_element_buckets(build_dir, tmp_path):
    predictor = built(build_dir, "phase4_chunked_nccl/phase4_predict")
    refused([predictor, "--calibration", calibration(tmp_path), "--bucket-mb", "1e-7"], "--bucket-mb",
            "at most 65536 buckets")


def test_huge_chunk_counts_are_refused_with_the_limit_named(phase2):
    result = refused([phase2, "--chunks", "100000", "--iters", "10"], "--chunks", "timeline events")
    assert "at most 1e+06" in result.stderr


@pytest.mark.parametrize("args, option, words", [
    (["--compute-ms", "0x1p3"], "--compute-ms", "not a finite decimal number"),
    (["--comm-ms", "inf"], "--comm-ms", "not a finite decimal number"),
    (["--seed", "99999999999999999999999"], "--seed", "out of range"),
    (["--csv", "/tmp/" + "a" * 230 + ".csv"], "--csv", "a file name may have here"),
])
def test_bad_invocation_of_phase2_numbers_and_names(phase2, args, option, words):
    """Numbers and names that would be misread: refused up front."""
    refused([phase2, *args], option, words)


def test_a_busy_step_longer_than_the_watchdog_waits_is_refused(phase3):
    import os
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    result = subprocess.run(["mpirun", "-np", "1", phase3, "--compute", "busy", "--busy-us", "1e9"],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode != 0 and "--busy-us" in result.stderr and "watchdog" in result.stderr, result.stderr


def test_a_batch_file_run_with_bash_from_elsewhere_finds_its_helpers(tmp_path):
    from conftest import REPO
    result = subprocess.run(["bash", str(REPO / "scripts" / "slurm" / "phase2.sbatch")], capture_output=True,
                            text=True, timeout=60, cwd=tmp_path,
                            env={"PATH": "/usr/bin:/bin", "OB_OUT": str(tmp_path / "out"),
                                 "OB_BUILD_DIR": str(tmp_path / "no-build")})
    assert "common.sh: No such file" not in result.stderr
    assert result.returncode == 2 and "is missing: build first" in result.stderr, result.stderr


def test_phase4_checks_a_calibrations_content_before_it_looks_for_a_gpu(build_dir, tmp_path):
    phase4 = built(build_dir, "phase4_chunked_nccl/phase4_chunked_nccl")
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "something else"}')
    refused([phase4, "--calibration", bad], "--calibration", "not a phase 4 calibration")


def test_the_report_of_a_run_with_many_chunks_stays_bounded(tmp_path):
    from overlap_bench.report import report

    rows = ["rank,lane,name,iter,chunk,start_us,end_us"]
    rows += [f"0,seq:thread 0,compute,0,{k},{10 * k},{10 * k + 5}" for k in range(3000)]
    (tmp_path / "big.timeline.csv").write_text("\n".join(rows) + "\n")
    text = report.write_report(tmp_path).read_text()
    assert "Per-chunk chart left out: 3000 chunks" in text
    assert not (tmp_path / "figures" / "big.timeline.chunks.png").exists()
