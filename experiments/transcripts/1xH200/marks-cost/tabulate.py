"""marks.csv of results/1xH200/marks-cost: per configuration, PyTorch's replayed compute-only step without and with an
event recorded after every Linear's forward and backward (marks.log, 2 x layers marks a step), the cost of one such
mark (the difference over the marks, an upper bound: the hooks that record them add autograd nodes, no kernels), phase
4's replayed compute-only step on one rank (p4-*.csv; its step records 2 x layers + 5 marks inside, StepMarks), and
what its marks cost at PyTorch's price per mark. No ratio between the two systems: they ran as separate processes,
not interleaved (their comparison is the headline's compute factor, from ob-compare). Run from the repository root."""
import pathlib
import re

import pandas as pd

from overlap_bench import packs

FOLDER = pathlib.Path("results/1xH200/marks-cost")
LINE = re.compile(r"(\d+),(\d+),(\d+): torch graph, no marks ([\d.]+) ms, marks after every layer \(\d+ recorded\) "
                  r"([\d.]+) ms")
rows = []
for match in LINE.finditer(packs.read_text(FOLDER / "marks.log")):
    h, l, b = map(int, match.groups()[:3])
    clean, marked = float(match[4]), float(match[5])
    p4 = packs.read_csv(FOLDER / f"p4-{h}-{l}-{b}.csv")
    p4_ms = float(p4.loc[p4["mode"] == "compute", "time_ms_p50"].iloc[0])
    per_mark_us = 1000 * (marked - clean) / (2 * l)
    rows.append({"config": f"{h}x{l}x{b}", "torch_graph_ms": clean, "torch_graph_marked_ms": marked,
                 "marks": 2 * l, "us_per_mark": per_mark_us, "phase4_graph_ms": p4_ms, "phase4_marks": 2 * l + 5,
                 "phase4_marks_ms": per_mark_us * (2 * l + 5) / 1000})
pd.DataFrame(rows).to_csv(FOLDER / "marks.csv", index=False, float_format="%.4f")
