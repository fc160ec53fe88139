"""PyTorch layers of a transformer shape as phase 4 describes it (ob_tool.model_shape: phase4_model --shape-json):
the same tensors, in the same backward order, with the same work per step, for DDP and FSDP2 on identical shapes
(bench_ddp.py --model).

Each block: norm1, Q, K, V (K and V of kv_heads x head_dim under grouped-query attention), the attention core as
batched GEMMs (Q Kᵀ / sqrt(head_dim), causal softmax, P V; no parameters, K/V heads repeated to the query heads), O,
a residual, norm2 and the MLP (gate, up, down with SiLU for SwiGLU; fc, proj with GELU for GPT-2), a residual.
Outside: the token embedding (and learned positions), the final norm, the LM head (the embedding when tied), and
cross-entropy against given next tokens. No rotary embedding or dropout (parameter-free elementwise work, left out on
both sides). Needs torch only (not torch.distributed): the tests build it on the CPU.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

from overlap_bench.ddp.causal_softmax import causal_softmax


class RMSNorm(nn.Module):
    """x / rms(x) * weight (Llama's, Qwen2's): one vector of `hidden`."""

    def __init__(self, hidden, eps=1e-5, device=None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden, device=device))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def norm(shape, device):
    h = shape["hidden"]
    return RMSNorm(h, device=device) if shape["norm"] == "rmsnorm" else nn.LayerNorm(h, device=device)


class Block(nn.Module):
    def __init__(self, shape, device=None):
        super().__init__()
        h, q, kv = shape["hidden"], shape["heads"] * shape["head_dim"], shape["kv_heads"] * shape["head_dim"]
        self.heads, self.kv_heads, self.head_dim = shape["heads"], shape["kv_heads"], shape["head_dim"]
        # Registered in forward order: reversed, the order their gradients complete in the backward.
        self.norm1 = norm(shape, device)
        self.q = nn.Linear(h, q, bias=shape["qkv_bias"], device=device)
        self.k = nn.Linear(h, kv, bias=shape["qkv_bias"], device=device)
        self.v = nn.Linear(h, kv, bias=shape["qkv_bias"], device=device)
        self.o = nn.Linear(q, h, bias=shape["o_bias"], device=device)
        self.norm2 = norm(shape, device)
        self.swiglu = shape["mlp"] == "swiglu"
        inter, bias = shape["intermediate"], shape["mlp_bias"]
        if self.swiglu:
            self.gate = nn.Linear(h, inter, bias=bias, device=device)
            self.up = nn.Linear(h, inter, bias=bias, device=device)
            self.down = nn.Linear(inter, h, bias=bias, device=device)
        else:
            self.fc = nn.Linear(h, inter, bias=bias, device=device)
            self.proj = nn.Linear(inter, h, bias=bias, device=device)

    def attention(self, x):
        """The core as batched GEMMs over (batch x heads): scores, causal softmax, weighted values."""
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.kv_heads != self.heads:
            k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
            v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        # One GEMM writes the scores, one kernel each way runs the scaled causal softmax and its backward: phase 4's
        # passes over the seq x seq probabilities (causal_softmax.py says what PyTorch's own ops add to them).
        rows = b * self.heads
        scores = torch.bmm(q.reshape(rows, s, self.head_dim), k.reshape(rows, s, self.head_dim).transpose(1, 2))
        p = causal_softmax(scores, 1 / math.sqrt(self.head_dim))
        out = torch.bmm(p, v.reshape(rows, s, self.head_dim)).view(b, self.heads, s, self.head_dim)
        return self.o(out.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        y = self.norm2(x)
        y = self.down(F.silu(self.gate(y)) * self.up(y)) if self.swiglu else self.proj(F.gelu(self.fc(y)))
        return x + y


class Transformer(nn.Module):
    """`device` "meta" builds the shapes without memory (the tests count a model's parameters so)."""

    def __init__(self, shape, blocks=0, device=None):
        super().__init__()
        kept = blocks if 0 < blocks < shape["layers"] else shape["layers"]
        self.shape, self.kept = shape, kept
        self.embed_tokens = nn.Embedding(shape["vocab"], shape["hidden"], device=device)
        positions = shape["positions"]
        self.embed_positions = nn.Embedding(positions, shape["hidden"], device=device) if positions else None
        self.blocks = nn.ModuleList(Block(shape, device) for _ in range(kept))
        self.final_norm = norm(shape, device)
        self.lm_head = None if shape["tied"] else nn.Linear(shape["hidden"], shape["vocab"], bias=False, device=device)

    def forward(self, tokens):
        x = self.embed_tokens(tokens)
        if self.embed_positions is not None:
            # Sequences longer than the learned positions wrap around them, as phase 4's lookup does.
            positions = torch.arange(tokens.shape[1], device=tokens.device) % self.shape["positions"]
            x = x + self.embed_positions(positions)
        for block in self.blocks:
            x = block(x)
        x = self.final_norm(x)
        return self.lm_head(x) if self.lm_head is not None else F.linear(x, self.embed_tokens.weight)

    def gradient_tensors(self):
        """(name, elements) of every gradient in backward order, named as phase4_model names them: a Linear's weight
        by its name and its bias as NAME.bias, a norm as one tensor (LayerNorm's weight and bias together)."""
        out = []

        def linear(name, module):
            out.append((name, module.weight.numel()))
            if module.bias is not None:
                out.append((name + ".bias", module.bias.numel()))

        def norm_of(name, module):
            out.append((name, sum(p.numel() for p in module.parameters())))

        if self.lm_head is not None:
            linear("lm_head", self.lm_head)
        norm_of("final_norm", self.final_norm)
        for b in reversed(range(self.kept)):
            block, at = self.blocks[b], f"block {b} "
            for name in (("down", "up", "gate") if block.swiglu else ("proj", "fc")):
                linear(at + "mlp." + name, getattr(block, name))
            norm_of(at + "norm2", block.norm2)
            for name in ("o", "v", "k", "q"):
                linear(at + "attn." + name, getattr(block, name))
            norm_of(at + "norm1", block.norm1)
        if self.embed_positions is not None:
            out.append(("embed_positions", self.embed_positions.weight.numel()))
        out.append(("embed_tokens (tied lm_head)" if self.lm_head is None else "embed_tokens",
                    self.embed_tokens.weight.numel()))
        return out

    def shard_units(self):
        """The modules FSDP2 shards one by one (then the whole model): each block."""
        return list(self.blocks)


def next_token_loss(model, tokens, targets):
    logits = model(tokens)
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

