"""bench_ddp.py --model builds the same layers as phase 4's transformer shapes (issue 35): for every preset and the
shipped config.json, the PyTorch model's gradients in backward order have phase4_model's names and sizes, and its
parameter count is theirs; one forward and backward of a small model runs and its loss is that of a uniform guess.
Needs torch (skipped without it, as on CI's CPU machine; the GPU image has it); the shapes come from phase4_model."""
import math
import subprocess

import pandas as pd
import pytest

from conftest import REPO, built

torch = pytest.importorskip("torch")
import ob_csv  # noqa: E402
import torch_transformer  # noqa: E402

MODELS = ["gpt2", "gpt2-xl", "llama3-8b", "qwen2.5-7b", str(REPO / "tests" / "data" / "models" / "llama3-8b.config.json"),
          str(REPO / "tests" / "data" / "models" / "gpt2.config.json")]


@pytest.fixture(scope="module")
def model_binary(build_dir):
    return built(build_dir, "phase4_chunked_nccl/phase4_model")


@pytest.mark.parametrize("name", MODELS)
def test_pytorch_layers_are_phase4s_tensors(model_binary, tmp_path, name):
    shape = ob_csv.model_shape(name, model_binary)
    for blocks in (2, 0):
        csv = tmp_path / f"tensors-{blocks}.csv"
        result = subprocess.run([str(model_binary), "--model", name, "--blocks", str(blocks), "--csv", str(csv)],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        listed = pd.read_csv(csv)
        model = torch_transformer.Transformer(shape, blocks, device="meta")
        tensors = model.gradient_tensors()
        assert [n for n, _ in tensors] == listed["name"].tolist()
        assert [e for _, e in tensors] == listed["elements"].tolist()
        assert sum(p.numel() for p in model.parameters()) == listed["elements"].sum()


def test_a_small_model_trains_one_step_with_the_expected_first_loss(model_binary):
    """gpt2's shapes at 1 block, 2 x 16 tokens: a forward, the cross-entropy near ln(vocab) at initialisation (the
    LM head's logits are small), every parameter gets a gradient."""
    shape = dict(ob_csv.model_shape("gpt2", model_binary), vocab=1000)
    torch.manual_seed(0)
    model = torch_transformer.Transformer(shape, 1)
    for p in model.parameters():
        if p.dim() == 2:
            torch.nn.init.normal_(p, std=0.02)
    tokens = torch.randint(0, 1000, (2, 16))
    loss = torch_transformer.next_token_loss(model, tokens, torch.randint(0, 1000, (2, 16)))
    assert loss.item() == pytest.approx(math.log(1000), rel=0.05)
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
