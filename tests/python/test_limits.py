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


@pytest.mark.parametrize("args", [["--bucket-mb", "1e-6"], ["--sweep", "bucket-mb=25,1e-300"],
                                  ["--first-bucket-mb", "1e-6"]])
def test_phase4_refuses_more_buckets_than_a_plan_may_hold(build_dir, args):
    phase4 = built(build_dir, "phase4_chunked_nccl/phase4_chunked_nccl")
    refused([phase4, *args], "bucket-mb", "at most 65536 buckets")


def test_phase4_predict_refuses_one_element_buckets(build_dir, tmp_path):
    predictor = built(build_dir, "phase4_chunked_nccl/phase4_predict")
    refused([predictor, "--calibration", calibration(tmp_path), "--bucket-mb", "1e-7"], "--bucket-mb",
            "at most 65536 buckets")


def test_huge_chunk_counts_are_refused_with_the_limit_named(phase2):
    result = refused([phase2, "--chunks", "100000", "--iters", "10"], "--chunks", "timeline events")
    assert "at most 1e+06" in result.stderr
