"""The derived metrics of METRICS.md in Python, for the scripts that compute them themselves (bench_ddp.py) and
check them (the tests): the same formulas as common/metrics.cpp, tested against the binaries' own rows.

    from overlap_bench.core import ob_metrics
    row.update(ob_metrics.overlap_metrics(t_seq, t_comp, t_comm, t_ovl))
"""
import math

import numpy as np

UNSTABLE_CI_REL = 0.05  # common/metrics.hpp's kUnstableCiRel (a test holds them equal)


def ideal_ms(t_comp, t_comm):
    """T_ideal = max(T_comp, T_comm)."""
    return max(t_comp, t_comm)


def speedup(t_seq, t_ovl):
    """T_seq / T_ovl (NaN when T_ovl is not positive)."""
    return t_seq / t_ovl if t_ovl > 0 else math.nan


def overlap_efficiency(t_comp, t_comm, t_ovl):
    """(T_comp + T_comm - T_ovl) / min(T_comp, T_comm) (NaN when there is nothing to hide)."""
    shorter = min(t_comp, t_comm)
    return (t_comp + t_comm - t_ovl) / shorter if shorter > 0 else math.nan


def overlap_pct(t_ovl, t_comp, t_comm):
    """OSU-style: 100 (1 - (T_ovl - T_comp) / T_comm), clamped to [0, 100] (NaN without communication)."""
    if not t_comm > 0:
        return math.nan
    return min(100.0, max(0.0, 100.0 * (1.0 - (t_ovl - t_comp) / t_comm)))


def compute_slowdown(overlapped_total, isolated_total):
    """(overlapped - isolated) / isolated compute time (NaN when the isolated time is not positive)."""
    return (overlapped_total - isolated_total) / isolated_total if isolated_total > 0 else math.nan


def algbw_GBps(nbytes, time_ms):
    """bytes / time, 1 GB = 1e9 B."""
    return nbytes / (time_ms * 1e-3) / 1e9 if time_ms > 0 else math.nan


def allreduce_busbw_GBps(algbw, ranks):
    """algbw * 2 (n - 1) / n (nccl-tests)."""
    return algbw * 2.0 * (ranks - 1) / ranks if ranks > 0 else math.nan


def overlap_metrics(t_seq, t_comp, t_comm, t_ovl):
    """The columns of an overlapped row: speedup, overlap_efficiency, overlap_pct."""
    return {"speedup": speedup(t_seq, t_ovl), "overlap_efficiency": overlap_efficiency(t_comp, t_comm, t_ovl),
            "overlap_pct": overlap_pct(t_ovl, t_comp, t_comm)}


def link_fit(buckets, step_ms, gradient_bytes):
    """A transport's comm-only steps over bucket counts (the same gradient cut finer or coarser) fitted as
    step = buckets * alpha + bytes / beta: (alpha in ms per bucket, beta in GB/s), by least squares; None where fewer
    than two bucket counts or a fit that is not positive in both."""
    points = sorted(zip(buckets, step_ms))
    if len({b for b, _ in points}) < 2:
        return None
    n = len(points)
    mean_b = sum(b for b, _ in points) / n
    mean_t = sum(t for _, t in points) / n
    slope = sum((b - mean_b) * (t - mean_t) for b, t in points) / sum((b - mean_b) ** 2 for b, _ in points)
    intercept = mean_t - slope * mean_b
    if not (slope > 0 and intercept > 0):
        return None
    return slope, gradient_bytes / 1e9 / (intercept / 1e3)


def median_ci_rel(samples, resamples=1000, seed=1234):
    """common/metrics.cpp's median_ci_rel: the half-width of the 95 % bootstrap interval of the median of `samples`
    over that median (percentiles linear, as numpy's and common/stats.cpp's); NaN for fewer than 2 samples. A row is
    unstable above UNSTABLE_CI_REL."""
    x = np.asarray(samples, dtype=float)
    if len(x) < 2:
        return math.nan
    medians = np.median(np.random.default_rng(seed).choice(x, size=(resamples, len(x))), axis=1)
    lo, hi = np.percentile(medians, [2.5, 97.5])
    return float((hi - lo) / 2 / np.median(x))
