#!/usr/bin/env python3
"""gap.csv from profile_ops.txt (torch.profiler's table of profile_ops.py, grouped by input shapes): the aten ops of
PyTorch's compute-only step of gpt2-xl (1 block, seq 4096, one H200) by their own CUDA time, each marked with the part
of the model it belongs to: the tied LM head's GEMMs (vocabulary 50257), the attention core's passes over the
25 x 4096 x 4096 scores, or the rest; and lm_head.csv: the tied LM head's two backward GEMMs in PyTorch against
phase 4's backward step that runs the same two GEMMs (with the final norm's backward), measured at seq 4096
(../gpt2-xl-4096/steps.csv, step 0); gap_fused.csv, the same table of profile_fused.txt (PyTorch with
scripts/causal_softmax.py), and steps.csv, the 4-block steps both profiles timed. make.sh runs it.

Usage: python3 make_gap.py"""
import pathlib
import re

import pandas as pd

HERE = pathlib.Path(__file__).resolve().parent
UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def milliseconds(text):
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()
    return float(value) * UNITS[unit]


def part(op, shapes):
    if "50257" in shapes:
        return "LM head and loss"
    if "4096, 4096]" in shapes or op == "aten::bmm":  # the batched GEMMs are the attention core's
        return "attention core (seq x seq)"
    return "other"


def ops(profile):
    """The aten ops (and the fused softmax's two autograd functions) of one torch.profiler table by their own CUDA
    time, with each one's share of the profiled step."""
    text = (HERE / profile).read_text()
    rows = []
    for line in text.split("Self CUDA time total")[0].splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if not cells[0].startswith(("aten::", "CausalSoftmax")) or len(cells) < 12:
            continue
        rows.append({"op": cells[0], "input_shapes": cells[11], "calls": int(cells[10]),
                     "self_cuda_ms": milliseconds(cells[6]), "part": part(cells[0], cells[11])})
    frame = pd.DataFrame(rows)
    frame["share_of_step"] = frame["self_cuda_ms"] / milliseconds(re.search(r"Self CUDA time total: (\S+)", text)[1])
    return frame


def timed_steps():
    """The 4-block steps each profile timed with CUDA events ("seq N: step X ms"), by PyTorch's softmax."""
    rows = []
    for profile, softmax in (("profile_kernels.txt", "aten"), ("profile_fused.txt", "fused")):
        for seq, ms in re.findall(r"seq (\d+): step ([\d.]+) ms", (HERE / profile).read_text()):
            rows.append({"pytorch_softmax": softmax, "blocks": 4, "seq": int(seq), "step_ms": float(ms)})
    return pd.DataFrame(rows)


def main():
    frame = ops("profile_ops.txt")
    frame.to_csv(HERE / "gap.csv", index=False)
    ops("profile_fused.txt").to_csv(HERE / "gap_fused.csv", index=False)
    timed_steps().to_csv(HERE / "steps.csv", index=False)
    backward = frame[(frame["part"] == "LM head and loss") & (frame["op"] == "aten::mm")
                     & ~frame["input_shapes"].str.startswith("[[4096, 1600]")]  # the forward's logits GEMM left out
    steps = pd.read_csv(HERE.parent / "gpt2-xl-4096" / "steps.csv")
    pd.DataFrame([{"torch_head_backward_gemms_ms": backward["self_cuda_ms"].sum(),
                   "phase4_final_norm_step_ms": steps.loc[steps["name"] == "final_norm", "backward_ms"].iloc[0]}]
                 ).to_csv(HERE / "lm_head.csv", index=False)


if __name__ == "__main__":
    main()
