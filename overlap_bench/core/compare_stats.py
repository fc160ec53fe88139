"""ob-compare's statistics: the order of every round, paired bootstrap intervals over rounds of a contender's median
against a baseline's (the fastest of a group, chosen again in every resample), and of its two factors: the
compute-only ratio (the same processes' compute-only steps: the same work without communication) and the overhead
ratio (each side's step over its own compute-only step); verdicts and the sentence a person reads (METRICS.md,
"Comparisons").

Per round r: step ratio = compute ratio x overhead ratio exactly. Over rounds each is a ratio of medians (the
overhead's a median of per-round step / compute), so the product of the two reported factors is close to the
reported ratio but not equal to it.
"""
import math

import numpy as np

UNSTABLE_REL = 0.05  # a contender whose median over rounds has a 95 % interval wider than +-5 % is unstable
RESAMPLES = 2000


def schedule(names, rounds, seed):
    """The order of every round: the names shuffled anew each round by one generator seeded with `seed`."""
    import random

    generator = random.Random(seed)
    orders = []
    for _ in range(rounds):
        order = list(names)
        generator.shuffle(order)
        orders.append(order)
    return orders


def round_seed(seed, round_index):
    """The seed a process of round `round_index` gets as {seed}: its points' order (phase 4 --order-seed)."""
    return (seed + 1000003 * (round_index + 1)) % 2 ** 32


def resamples(rounds, seed, count=RESAMPLES):
    """Round indices of `count` paired resamples (whole rounds drawn with replacement), the same for every statistic
    of one seed."""
    return np.random.default_rng(seed).integers(0, rounds, size=(count, rounds))


def verdict(lo, hi, neutral=1.0):
    if hi < neutral:
        return "faster"
    if lo > neutral:
        return "slower"
    return "not resolved"


def interval(values):
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def bootstrap_ratios(times, contender, group, seed, count=RESAMPLES):
    """Ratio of `contender`'s median over rounds to the fastest of `group`'s, and its 95 % percentile interval over
    paired round resamples (the fastest chosen again in each). `times`: contender -> per-round times (same rounds).
    Returns (ratio, lo, hi, the group member that was fastest)."""
    split = factor_ratios(times, None, contender, group, seed, count)
    return split["ratio"], split["ratio_ci_lo"], split["ratio_ci_hi"], split["pick"]


def factor_ratios(steps, computes, contender, group, seed, count=RESAMPLES):
    """The step ratio of `contender` to the fastest of `group` (as bootstrap_ratios) and, where `computes` (name ->
    per-round compute-only times, NaN where absent) holds both sides, its two factors over the same resamples and
    picks: compute_ratio (compute-only medians) and overhead_ratio (medians of step / own compute-only). A dict of
    ratio, ratio_ci_lo, ratio_ci_hi, pick, compute_ratio, compute_ci_lo, compute_ci_hi, overhead_ratio,
    overhead_ci_lo, overhead_ci_hi (NaN without compute-only times)."""
    names = [contender] + [g for g in group if g != contender]
    step = {n: np.asarray(steps[n], dtype=float) for n in names}
    medians = {n: float(np.median(step[n])) for n in names}
    pick = min(group, key=lambda n: medians[n])
    indices = resamples(len(step[contender]), seed, count)
    drawn = {n: np.median(step[n][indices], axis=1) for n in names}
    stacked = np.stack([drawn[n] for n in group])
    picks = np.argmin(stacked, axis=0)  # the fastest member in each resample
    lo, hi = interval(drawn[contender] / stacked[picks, np.arange(count)])
    result = {"ratio": medians[contender] / medians[pick], "ratio_ci_lo": lo, "ratio_ci_hi": hi, "pick": pick}
    nan = {f"{k}_{s}": math.nan for k in ("compute", "overhead") for s in ("ratio", "ci_lo", "ci_hi")}
    result.update(nan)
    if computes is None:
        return result
    comp = {n: np.asarray(computes[n], dtype=float) for n in names}
    if any(not np.all(np.isfinite(comp[n])) or np.any(comp[n] <= 0) for n in names):
        return result
    over = {n: step[n] / comp[n] for n in names}
    for key, values in (("compute", comp), ("overhead", over)):
        drawn_factor = np.stack([np.median(values[n][indices], axis=1) for n in group])
        own = np.median(values[contender][indices], axis=1)
        lo, hi = interval(own / drawn_factor[picks, np.arange(count)])
        result.update({f"{key}_ratio": float(np.median(values[contender]) / np.median(values[pick])),
                       f"{key}_ci_lo": lo, f"{key}_ci_hi": hi})
    return result


def median_interval(values, seed, count=RESAMPLES):
    """95 % bootstrap interval of the median of `values`, and its relative half-width."""
    values = np.asarray(values, dtype=float)
    medians = np.median(values[resamples(len(values), seed, count)], axis=1)
    lo, hi = interval(medians)
    return lo, hi, float((hi - lo) / 2 / np.median(values))


def carrier(row):
    """Which factor carries the step ratio: the one further from 1 in its direction ('compute' or 'overhead'), or
    '' where the split is absent or both factors go against the ratio."""
    ratio, compute, overhead = row["ratio"], row.get("compute_ratio", math.nan), row.get("overhead_ratio", math.nan)
    if not (math.isfinite(compute) and math.isfinite(overhead)) or ratio == 1:
        return ""
    direction = 1 if ratio > 1 else -1
    weights = {"compute": direction * math.log(compute), "overhead": direction * math.log(overhead)}
    best = max(weights, key=weights.get)
    return best if weights[best] > 0 else ""


def sentence(row):
    """One line a person reads: 'nccl is faster than ddp by 17 %: 0.830x [0.80, 0.86] over 5 rounds; compute 0.95x
    [0.94, 0.96], overlap overhead 0.87x [0.85, 0.90]: the overhead carries it'."""
    against = row["baseline"] if row["baseline"] == row["baseline_pick"] else \
        f"the fastest of {row['baseline']} ({row['baseline_pick']})"
    words = {"faster": "faster than", "slower": "slower than", "not resolved": "not resolved against"}
    by = ""
    if row["verdict"] in ("faster", "slower"):
        by = f" by {abs(1 - row['ratio']) * 100:.0f} %"
    text = (f"{row['contender']} is {words[row['verdict']]} {against}{by}: {row['ratio']:.3f}x "
            f"[{row['ratio_ci_lo']:.3f}, {row['ratio_ci_hi']:.3f}] over {row['rounds']} rounds")
    if math.isfinite(row.get("compute_ratio", math.nan)):
        text += (f"; compute {row['compute_ratio']:.3f}x [{row['compute_ci_lo']:.3f}, {row['compute_ci_hi']:.3f}], "
                 f"overlap overhead {row['overhead_ratio']:.3f}x [{row['overhead_ci_lo']:.3f}, "
                 f"{row['overhead_ci_hi']:.3f}]")
        carried = row.get("carried_by") or carrier(row)
        if carried and row["verdict"] != "not resolved":
            text += f": the {carried} carries it"
    if row["unstable"]:
        text += f" (unstable: its median moves +-{100 * row['median_ci_rel']:.1f} % between rounds)"
    if row.get("beats_compute"):
        text += " (its step is faster than its own compute-only step beyond the interval: a broken baseline)"
    return text
