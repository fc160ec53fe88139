#!/usr/bin/env python3
"""gap.csv from profile_ops.txt (torch.profiler's table of profile_ops.py, grouped by input shapes): the aten ops of
PyTorch's compute-only step of gpt2-xl (1 block, seq 4096, one H200) by their own CUDA time, each marked with the part
of the model it belongs to: the tied LM head's GEMMs (vocabulary 50257), the attention core's passes over the
25 x 4096 x 4096 scores, or the rest; and lm_head.csv: the tied LM head's two backward GEMMs in PyTorch against
phase 4's backward step that runs the same two GEMMs (with the final norm's backward), measured at seq 4096
(../gpt2-xl-4096/steps.csv, step 0). make.sh runs it.

Usage: python3 make_gap.py"""
import pathlib
import re

import pandas as pd

HERE = pathlib.Path(__file__).resolve().parent
UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def milliseconds(text):
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()
    return float(value) * UNITS[unit]


def part(shapes):
    if "50257" in shapes:
        return "LM head and loss"
    if "4096, 4096]" in shapes:
        return "attention core (seq x seq)"
    return "other"


def main():
    table = (HERE / "profile_ops.txt").read_text().split("Self CUDA time total")[0]
    rows = []
    for line in table.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if not cells[0].startswith("aten::") or len(cells) < 12:
            continue
        shapes = cells[11] if len(cells) > 11 else ""
        rows.append({"op": cells[0], "input_shapes": shapes, "calls": int(cells[10]),
                     "self_cuda_ms": milliseconds(cells[6]), "part": part(shapes)})
    total = milliseconds(re.search(r"Self CUDA time total: (\S+)", (HERE / "profile_ops.txt").read_text()).group(1))
    frame = pd.DataFrame(rows)
    frame["share_of_step"] = frame["self_cuda_ms"] / total
    frame.to_csv(HERE / "gap.csv", index=False)
    backward = frame[(frame["part"] == "LM head and loss") & (frame["op"] == "aten::mm")
                     & ~frame["input_shapes"].str.startswith("[[4096, 1600]")]  # the forward's logits GEMM left out
    steps = pd.read_csv(HERE.parent / "gpt2-xl-4096" / "steps.csv")
    pd.DataFrame([{"torch_head_backward_gemms_ms": backward["self_cuda_ms"].sum(),
                   "phase4_final_norm_step_ms": steps.loc[steps["name"] == "final_norm", "backward_ms"].iloc[0]}]
                 ).to_csv(HERE / "lm_head.csv", index=False)


if __name__ == "__main__":
    main()
