"""bench_ddp.py --graph (issue 49): DDP's step, its all-reduces included, captured once in a CUDA graph and replayed,
as phase 4's --graph; the replay's gradients checked against a manual all-reduce, and that check catches a replay
that corrupts one gradient. Needs torch and a GPU (skipped without them, as on CI's CPU machine)."""
import subprocess
import sys

import pandas as pd
import pytest

from conftest import REPO

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1"]

# One rank: the captured DDP step, then a replay whose first gradient is nudged after the step (a corrupted
# collective's result): the checker must report it, and an honest replay must pass.
CORRUPTED = """
import argparse, torch, torch.distributed as dist
from overlap_bench.ddp import ddp_steps as d
torch.cuda.set_device(0)
dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
args = argparse.Namespace(seed=1, lr=0.01, default=False, fsdp=False, graph=True)
work = d.Mlp("256,3,32")
step = d.Step(work, *work.data(torch.Generator(device="cuda").manual_seed(5)), set_to_none=True)
with torch.cuda.stream(torch.cuda.Stream()):
    wrapped, gradient = d.wrap(work, "ddp", 25, True, d.fresh_model(args, work))
    optimizer = torch.optim.SGD(wrapped.parameters(), **d.optimizer_options(args))
    replay = d.graphed(step.of(wrapped, optimizer), eager=11)
    honest = d.replay_error(args, work, step, 1, replay, wrapped, gradient)
    def corrupted():
        replay()
        next(wrapped.parameters()).grad.view(-1)[7] += 1e-2
    bad = d.replay_error(args, work, step, 1, corrupted, wrapped, gradient)
print(f"honest {honest:.3g} corrupted {bad:.3g}")
dist.destroy_process_group()
"""


def test_ddp_graph_rows_replay_the_captured_step_and_pass_the_gradient_check(tmp_path):
    csv = tmp_path / "ddp.csv"
    result = subprocess.run([*TORCHRUN, "-m", "overlap_bench.ddp.bench_ddp", "--configs", "512,4,64",
                             "--bucket-mb", "1",
                             "25", "--iters", "4", "--warmup", "2", "--passes", "2", "--graph", "--csv", str(csv)],
                            capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = pd.read_csv(csv)
    assert sorted(rows["mode"].unique()) == ["comm", "compute", "ideal", "overlap", "seq"]  # no compute-graph row
    assert (rows["graph"] == 1).all() and (rows["ddp_grad_rel_error"] <= 1e-5).all()
    assert sorted(rows.loc[rows["mode"] == "overlap", "bucket_mb"]) == [1.0, 25.0]


def test_the_replay_check_catches_a_corrupted_gradient(tmp_path):
    script = tmp_path / "corrupt.py"
    script.write_text(CORRUPTED)
    result = subprocess.run([*TORCHRUN, str(script)], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("honest"))
    honest, corrupted = float(line.split()[1]), float(line.split()[3])
    assert honest <= 1e-5 and corrupted > 1e-4, line
