"""The attention core's softmax with phase 4's passes over the seq x seq scores (transformer_kernels.cu):
forward, p = softmax(scale * s) over each row's first i+1 columns and 0 after them, reading only those columns, in one
kernel; backward, ds = scale * p * (dp - rowsum(p * dp)), in one kernel.

In PyTorch's own ops that is two passes more a block: a masked softmax adds the mask in a pass of its own (or
baddbmm copies it into its output first), and softmax's backward multiplies grad by output in a separate kernel before
its reduction (aten::mul, 1.14 ms a block of gpt2-xl at seq 4096 on an H200: results/.../compute-gap). On CUDA the two
kernels are Triton's (shipped with PyTorch); elsewhere, or without Triton, the same formulas in PyTorch ops (the CPU
tests check these against autograd's softmax).
"""
import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # PyTorch on the CPU, as in the tests
    triton = None

if triton is not None:
    @triton.jit
    def _forward_kernel(s_ptr, p_ptr, seq, scale, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        at = row.to(tl.int64) * seq
        cols = tl.arange(0, BLOCK)
        x = tl.load(s_ptr + at + cols, mask=cols <= row % seq, other=-float("inf")) * scale
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(p_ptr + at + cols, e / tl.sum(e, axis=0), mask=cols < seq)

    @triton.jit
    def _backward_kernel(p_ptr, dp_ptr, ds_ptr, seq, scale, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        at = row.to(tl.int64) * seq
        cols = tl.arange(0, BLOCK)
        inside = cols < seq
        p = tl.load(p_ptr + at + cols, mask=inside, other=0.0)
        dp = tl.load(dp_ptr + at + cols, mask=inside, other=0.0)
        tl.store(ds_ptr + at + cols, scale * p * (dp - tl.sum(p * dp, axis=0)), mask=inside)


def _launch(kernel, out, *tensors, scale):
    seq = out.shape[-1]
    block = triton.next_power_of_2(seq)
    kernel[(out.numel() // seq,)](*tensors, out, seq, scale, BLOCK=block, num_warps=max(4, min(16, block // 256)))
    return out


def _fused(t):
    return triton is not None and t.is_cuda and t.dtype == torch.float32


def forward(scores, scale):
    """p from the scores (..., seq, seq), contiguous."""
    if _fused(scores):
        return _launch(_forward_kernel, torch.empty_like(scores), scores, scale=scale)
    seq = scores.shape[-1]
    above = torch.ones(seq, seq, dtype=torch.bool, device=scores.device).triu(1)
    return torch.softmax((scores * scale).masked_fill(above, float("-inf")), dim=-1)


def backward(p, dp, scale):
    """ds from p and dp (..., seq, seq), contiguous."""
    if _fused(p):
        return _launch(_backward_kernel, torch.empty_like(p), p, dp, scale=scale)
    return scale * p * (dp - (p * dp).sum(-1, keepdim=True))


class CausalSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores, scale):
        p = forward(scores.contiguous(), scale)
        ctx.save_for_backward(p)
        ctx.scale = scale
        return p

    @staticmethod
    def backward(ctx, dp):
        (p,) = ctx.saved_tensors
        return backward(p, dp.contiguous(), ctx.scale), None


def causal_softmax(scores, scale):
    """softmax(scale * scores) under the causal mask, phase 4's passes (the module's docstring)."""
    return CausalSoftmax.apply(scores, scale)
