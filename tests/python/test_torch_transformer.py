"""bench_ddp.py --model builds the same layers as phase 4's transformer shapes (issue 35): for every preset and the
shipped config.json, the PyTorch model's gradients in backward order have phase4_model's names and sizes, and its
parameter count is theirs; one forward and backward of a small model runs and its loss is that of a uniform guess.
Needs torch (skipped without it, as on CI's CPU machine; the GPU image has it); the shapes come from phase4_model."""
import math
import subprocess

import pandas as pd
import pytest

from conftest import REPO

torch = pytest.importorskip("torch")
from overlap_bench.core import ob_tool  # noqa: E402
from overlap_bench.ddp import torch_transformer  # noqa: E402

MODELS = ["gpt2", "gpt2-xl", "llama3-8b", "qwen2.5-7b",
          str(REPO / "tests" / "data" / "models" / "llama3-8b.config.json"),
          str(REPO / "tests" / "data" / "models" / "gpt2.config.json")]


@pytest.mark.parametrize("name", MODELS)
def test_pytorch_layers_are_phase4s_tensors(model_binary, tmp_path, name):
    shape = ob_tool.model_shape(name, model_binary)
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
    shape = dict(ob_tool.model_shape("gpt2", model_binary), vocab=1000)
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


def reference_softmax(scores, scale):
    seq = scores.shape[-1]
    above = torch.ones(seq, seq, dtype=torch.bool, device=scores.device).triu(1)
    return torch.softmax((scores * scale).masked_fill(above, float("-inf")), dim=-1)


def softmax_and_grad(function, scores, dp, scale):
    scores = scores.detach().clone().requires_grad_()
    p = function(scores, scale)
    p.backward(dp)
    return p.detach(), scores.grad


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_causal_softmax_is_autograds_masked_softmax_both_ways(device):
    """causal_softmax (one pass each way: Triton's kernels on CUDA, the same formulas on the CPU) against autograd
    through PyTorch's own masked softmax; rows of a length that is no power of two, two batches of 3 heads. A
    corrupted probability is caught: one entry above the diagonal made nonzero fails the comparison."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no GPU")
    from overlap_bench.ddp import causal_softmax
    torch.manual_seed(0)
    dtype = torch.float64 if device == "cpu" else torch.float32
    scores = torch.randn(6, 77, 77, dtype=dtype, device=device) * 4
    dp = torch.randn(6, 77, 77, dtype=dtype, device=device)
    p, ds = softmax_and_grad(causal_softmax.causal_softmax, scores, dp, 0.125)
    p_ref, ds_ref = softmax_and_grad(reference_softmax, scores, dp, 0.125)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-6)
    assert torch.allclose(p, p_ref, **tol) and torch.allclose(ds, ds_ref, **tol)
    assert (p.triu(1) == 0).all() and torch.allclose(p.sum(-1), torch.ones(6, 77, dtype=dtype, device=device))
    p[2, 5, 40] = 1e-3
    assert not torch.allclose(p, p_ref, **tol)
