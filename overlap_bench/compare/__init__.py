"""Comparisons that survive a reviewer: ob-compare's interleaved rounds (compare, compare_runs, compare_spec), the
headline, the before/after gate and the GPU benchmark's parts."""
