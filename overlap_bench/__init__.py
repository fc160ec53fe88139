"""overlap-bench's Python tools, one package: plots and the report, the PyTorch DDP/FSDP2 side of comparisons,
ob-compare and the headline, the planner's what-if and checks, the trace analyzer. Each tool is a module with a
`cli()` (an `ob-...` command once installed; `python3 -m overlap_bench.<module>` in a checkout)."""
