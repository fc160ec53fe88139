"""No metadata field typed by hand (issue 32): every published run names a commit that is in this repository's
history, or says it could not be checked (`-unverified`); the scripts record their commit as the binaries do
(cmake/GitCommit.cmake through ob_tool.commit_id); bench_ddp.py keeps every repeat and times seq and comm with DDP's
own buckets."""
import json
import math
import os
import shutil
import subprocess

import pytest

from conftest import REPO
from overlap_bench.ddp import bench_ddp
from overlap_bench.ddp import ddp_steps
from overlap_bench.core import ob_tool
from overlap_bench.core import packs

HAS_GIT = shutil.which("git") is not None and (REPO / ".git").exists()


def in_history(commit):
    return subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{commit}^{{commit}}"],
                          capture_output=True).returncode == 0


@pytest.mark.skipif(not HAS_GIT, reason="needs git and a checkout")
def test_every_published_commit_is_in_history_or_marked_unverified():
    bad = []
    metas = packs.rglob(REPO / "results", "*.meta.json")  # packed ones too
    assert metas, "no published metadata found"
    for path in metas:
        if "runs" in path.relative_to(REPO / "results").parts[:1]:
            continue  # ad-hoc runs, git-ignored
        commit = json.loads(packs.read_text(path)).get("commit")
        if not isinstance(commit, str) or not commit:
            bad.append(f"{path}: no commit")
            continue
        if commit.endswith("-unverified"):
            continue
        base = commit[: -len("-dirty")] if commit.endswith("-dirty") else commit
        if len(base) < 7 or not in_history(base):
            bad.append(f"{path}: commit '{commit}' is not in this repository's history")
    assert not bad, "\n".join(bad)


@pytest.mark.skipif(not HAS_GIT or shutil.which("cmake") is None, reason="needs git, cmake and a checkout")
def test_scripts_record_the_commit_as_the_binaries_do(monkeypatch):
    monkeypatch.delenv("OVERLAP_GIT_COMMIT", raising=False)
    monkeypatch.delenv("OVERLAP_GIT_DIGEST", raising=False)
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert ob_tool.commit_id(REPO) == head + ("-dirty" if dirty else "")


def test_a_commit_nothing_can_check_is_marked_unverified(tmp_path, monkeypatch):
    monkeypatch.setenv("OVERLAP_GIT_COMMIT", "0123456789ab")
    monkeypatch.delenv("OVERLAP_GIT_DIGEST", raising=False)
    assert ob_tool.commit_id(tmp_path) == "0123456789ab-unverified"  # no cmake/GitCommit.cmake there
    monkeypatch.delenv("OVERLAP_GIT_COMMIT")
    assert ob_tool.commit_id(tmp_path) == "unknown"


def test_ddp_bucket_assignment_is_ddps_rule():
    mib = 1 << 20
    # 16 layers of 64 MiB gradients, cap 25 MiB: the first bucket closes at 1 MiB (its own cap) after one layer,
    # then every layer fills a bucket on its own.
    assert ddp_steps.ddp_buckets([64 * mib] * 16, mib, 25 * mib) == [[i] for i in range(16)]
    # 4 MiB layers, cap 10 MiB: first bucket one layer, then three layers (12 >= 10) per bucket, the rest last.
    assert ddp_steps.ddp_buckets([4 * mib] * 8, mib, 10 * mib) == [[0], [1, 2, 3], [4, 5, 6], [7]]
    assert ddp_steps.ddp_buckets([], mib, 10 * mib) == []


def test_ddp_bucket_assignment_matches_torch():
    torch = pytest.importorskip("torch")
    dist = torch.distributed
    if not hasattr(dist, "_compute_bucket_assignment_by_size"):
        pytest.skip("this torch has no _compute_bucket_assignment_by_size")
    sizes = [3 * (1 << 18), 1 << 20, 5 * (1 << 18), 1 << 19, 1 << 21, 7 * (1 << 16)]
    tensors = [torch.empty(n // 4) for n in sizes]
    for cap_mb in (1, 2, 4):
        got = dist._compute_bucket_assignment_by_size(tensors, [1 << 20, cap_mb << 20])
        got = got[0] if isinstance(got, tuple) else got
        assert [list(b) for b in got] == ddp_steps.ddp_buckets(sizes, 1 << 20, cap_mb << 20), cap_mb


def fake_stats(ms):
    return {"time_ms_p50": ms, "time_ms_p95": ms, "time_ms_min": ms, "time_ms_max": ms, "time_ms_mean": ms,
            "time_ms_stddev": 0.0}


def test_every_repeat_is_its_own_rows_with_its_own_seq_and_comm():
    class Args:
        iters, tf32, graph = 5, True, False
    def modes(seq, comm, ovl):
        return {"seq": fake_stats(seq), "comm": fake_stats(comm), "overlap": fake_stats(ovl)}
    runs = [("ddp", 25.0, modes(10, 4, 8), 5), ("ddp", 64.0, modes(11, 4.5, 9), 3), ("ddp", 25.0, modes(12, 5, 7), 5)]
    lines = bench_ddp.summary_rows(Args, "pytorch-ddp", 2, bench_ddp.Mlp("4096,16,512"), {"compute": fake_stats(6)},
                                   runs, 0.0)
    overlap = [line for line in lines if line["mode"] == "overlap"]
    assert [(o["bucket_mb"], o["repeat"]) for o in overlap] == [(25.0, 0), (64.0, 0), (25.0, 1)]
    assert [o["time_ms_p50"] for o in overlap] == [8, 9, 7]
    # each overlapped row's metrics use its own run's seq and comm and the one compute-only step
    third = overlap[2]
    assert math.isclose(third["speedup"], 12 / 7)
    assert math.isclose(third["overlap_efficiency"], (6 + 5 - 7) / 5)
    assert sum(line["mode"] == "seq" for line in lines) == 3 and sum(line["mode"] == "compute" for line in lines) == 1
    assert {line["buckets"] for line in lines if line["mode"] == "comm"} == {5, 3}
    assert "repeat" in bench_ddp.CONFIG_KEYS


def test_fsdp2_runs_the_reshardings_asked_for_one_overlap_row_each():
    class Args:
        fsdp, bucket_mb, reshard_after_forward, order_seed = True, [25.0], [0, 1], None
    assert bench_ddp.settings(Args) == [("fsdp", 0), ("fsdp", 1)]
    Args.reshard_after_forward = [0]  # one row: a comparison's contender
    assert bench_ddp.settings(Args) == [("fsdp", 0)]
    Args.fsdp = False
    assert bench_ddp.settings(Args) == [("ddp", 25.0)]
    # --order-seed: the same settings in an order fixed by the seed and the configuration
    Args.bucket_mb, Args.order_seed = [25.0, 64.0, 128.0, 256.0], 7
    work = bench_ddp.Mlp("4096,16,512")
    shuffled = bench_ddp.settings(Args, work)
    assert sorted(shuffled) == [("ddp", 25.0), ("ddp", 64.0), ("ddp", 128.0), ("ddp", 256.0)]
    assert bench_ddp.settings(Args, work) == shuffled and shuffled != [("ddp", c) for c in Args.bucket_mb]


def test_every_mode_steps_with_the_wrapped_steps_optimizer():
    class Args:
        lr, default, fsdp = 0.01, False, False
    assert bench_ddp.optimizer_options(Args) == {"lr": 0.01, "fused": True}
    Args.fsdp = True
    assert bench_ddp.optimizer_options(Args) == {"lr": 0.01, "foreach": True}
    Args.fsdp, Args.default = False, True
    assert bench_ddp.optimizer_options(Args) == {"lr": 0.01}
    assert os.path.basename(bench_ddp.__file__) == "bench_ddp.py"
