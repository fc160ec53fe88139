"""The tuner (Probe(..., tune=True)): the settings the probe would advise, tried inside the user's own loop after its
measurement, each timed against the job's own setting, and the verdict with its interval.

Its steps, within a budget (`tune_steps`, 200 by default), in two stages: screening rounds, each trying every
setting once, then racing rounds over the RACE_KEEP settings leading after them (the budget goes where the verdict is
decided; every rank picks the same from the slowest rank's times). A round tries its settings in an order shuffled
per round (the same on every rank): a block of the job's own steps (OWN_WARMUP steps, then PER_BLOCK timed
ones; they train, as any of the job's steps does), then a block of the setting's (SETTING_WARMUP steps, then
PER_BLOCK timed; DDP rebuilds its buckets after a new wrapper's first step, a compiled trial compiles in its first):
the trained state is copied before it and put back after it (the batches it took are not trained on), so that the
model and optimizer after the tuner are bit for bit those of the job's own steps alone. Each step is timed by the
probe's clock, the slowest rank's time the step's.

A setting's ratio is the median of its timed steps over the median of the job's own timed steps beside them, with a
95 % bootstrap interval paired by round (rounds drawn with their two blocks together, the steps of each block drawn
within it). The verdict: the setting with the lowest ratio among those whose interval lies below 1 (resolved faster),
or "keep yours" where none does. Torch only."""
import csv
import io
import math
import random
import statistics

PER_BLOCK = 3  # timed steps of a block
OWN_WARMUP = 1  # the job's own steps before its timed ones, after a setting's block
SETTING_WARMUP = 2  # a setting's steps before its timed ones
BUDGET = 200  # the tuner's steps by default
LEAST_ROUNDS = 2
RACE_KEEP = 2  # settings raced after the screening rounds
RESAMPLES = 2000
PER_SETTING_ROUND = OWN_WARMUP + SETTING_WARMUP + 2 * PER_BLOCK


def rounds_for(budget, settings):
    """Rounds the budget pays for with `settings` candidates (at least LEAST_ROUNDS, or 0 where it cannot)."""
    rounds = budget // (PER_SETTING_ROUND * settings) if settings else 0
    return rounds if rounds >= LEAST_ROUNDS else 0


def stages(budget, settings):
    """(screening rounds over every setting, racing rounds over the RACE_KEEP leading ones) that `budget` pays for:
    half the budget screens (LEAST_ROUNDS at least), the rest races; with RACE_KEEP settings or fewer, all screens.
    (0, 0) where not even LEAST_ROUNDS screening rounds fit."""
    if settings <= RACE_KEEP or not rounds_for(budget, settings):
        return rounds_for(budget, settings), 0
    screen = max(LEAST_ROUNDS, rounds_for(budget // 2, settings))
    return screen, (budget - screen * PER_SETTING_ROUND * settings) // (PER_SETTING_ROUND * RACE_KEEP)


def prepare(row, budget, room):
    """The wrapper row's settings and the (screening, racing) rounds `budget` pays for; a ValueError naming why the
    tuner cannot run: no setting, too few steps, or more device memory than `room` bytes for what its settings hold at
    once."""
    settings = row.settings()
    if not settings:
        raise ValueError(f"tune: the {row.name} row has no setting to try on this model")
    screen, race = stages(budget, len(settings))
    if not screen:
        raise ValueError(f"tune_steps: {budget} steps are too few for {len(settings)} settings ({LEAST_ROUNDS} rounds "
                         f"of {PER_SETTING_ROUND} steps each need {LEAST_ROUNDS * PER_SETTING_ROUND * len(settings)})")
    need = row.tune_bytes(settings)
    if need > room:
        raise ValueError(f"tune: its settings hold {need / 2**30:.2f} GiB of device memory at once, more than the "
                         f"{max(room, 0) / 2**30:.2f} GiB free beside the job and the probe's copy of its state")
    return settings, screen, race


def plan(settings, rounds, seed=0, first=0):
    """The tuner's steps in order: (kind, round, setting index), kind one of tune-own-warmup, tune-own (the job's
    own), tune-warmup, tune (setting `index`'s). `settings` is a count (every setting) or the indices to try;
    rounds are numbered from `first`."""
    indices = list(range(settings)) if isinstance(settings, int) else list(settings)
    steps, generator = [], random.Random(seed)
    for r in range(first, first + rounds):
        order = list(indices)
        generator.shuffle(order)
        for s in order:
            steps += [("tune-own-warmup", r, s)] * OWN_WARMUP + [("tune-own", r, s)] * PER_BLOCK
            steps += [("tune-warmup", r, s)] * SETTING_WARMUP + [("tune", r, s)] * PER_BLOCK
    return steps


def leading(samples, settings):
    """The settings raced after screening: the RACE_KEEP lowest ratios (point estimates) among those not resolved
    slower than the job's own, in index order; none where every setting was resolved slower. `samples` as analyse's,
    the same on every rank, so the pick is too."""
    rows = []
    for index in range(settings):
        own, trial = _blocks(samples, index)
        if trial:
            ratio, lo, _ = ratio_interval(own, trial, seed=index, count=RESAMPLES // 4)
            if lo <= 1:
                rows.append((ratio, index))
    return sorted(index for _, index in sorted(rows)[:RACE_KEEP])


def _blocks(samples, index):
    """Setting `index`'s job's own and trial steps, {round: [ms]} each."""
    mine = {k: {} for k in ("tune-own", "tune")}
    for kind, r, s, ms in samples:
        if s == index and kind in mine:
            mine[kind].setdefault(r, []).append(ms)
    return mine["tune-own"], mine["tune"]


def ratio_interval(own, trial, seed=0, count=RESAMPLES):
    """median(trial) / median(own) with its 95 % bootstrap interval, paired by round: `own` and `trial` are
    {round: [ms]}; rounds are drawn with both their blocks, the steps of each block within it."""
    rounds = sorted(set(own) & set(trial))
    point = statistics.median(v for r in rounds for v in trial[r]) / statistics.median(v for r in rounds
                                                                                          for v in own[r])
    generator, drawn = random.Random(seed), []
    for _ in range(count):
        a, b = [], []
        for r in generator.choices(rounds, k=len(rounds)):
            a += generator.choices(own[r], k=len(own[r]))
            b += generator.choices(trial[r], k=len(trial[r]))
        drawn.append(statistics.median(b) / statistics.median(a))
    drawn.sort()
    return point, drawn[int(0.025 * count)], drawn[int(0.975 * count) - 1]


def analyse(samples, settings, own):
    """Each setting's row and the verdict. `samples` are (kind, round, setting index, the slowest rank's ms) of the
    tuner's steps, `settings` the candidates (wrappers.Setting), `own` the job's own setting in words."""
    rows = []
    for index, setting in enumerate(settings):
        own_steps, trial = _blocks(samples, index)
        if not trial:
            continue
        ratio, lo, hi = ratio_interval(own_steps, trial, seed=index)
        verdict = "faster" if hi < 1 else "slower" if lo > 1 else "not resolved"
        rows.append({"setting": setting.key, "paste": setting.paste, "rounds": len(trial),
                     "steps": sum(map(len, trial.values())),
                     "own_ms": statistics.median(v for vs in own_steps.values() for v in vs),
                     "step_ms": statistics.median(v for vs in trial.values() for v in vs),
                     "ratio": ratio, "ci_lo": lo, "ci_hi": hi, "verdict": verdict, "best": False})
    faster = [row for row in rows if row["verdict"] == "faster"]
    best = min(faster, key=lambda row: row["ratio"]) if faster else None
    if best:
        best["best"] = True
    return {"own": own, "settings": rows, "best": best["setting"] if best else None,
            "paste": best["paste"] if best else None, "gain": 1 - best["ratio"] if best else 0.0}


COLUMNS = ("setting", "paste", "rounds", "steps", "own_ms", "step_ms", "ratio", "ci_lo", "ci_hi", "verdict", "best")


def csv_text(result):
    """tune.csv: every setting tried, one row each."""
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(result["settings"])
    return out.getvalue()


def sentences(result):
    """The verdict in words: the line to paste with its measured gain, or keep yours."""
    rows = result["settings"]
    if not rows:
        return ["tune: no setting was tried"]
    tried = f"{len(rows)} setting{'s' * (len(rows) != 1)} tried against yours ({result['own']})"
    if result["best"]:
        row = next(r for r in rows if r["best"])
        return [f"tune: {tried}; the fastest resolved: {row['setting']}, the step {row['ratio']:.3f}x yours "
                f"[{row['ci_lo']:.3f}, {row['ci_hi']:.3f}] ({100 * (1 - row['ratio']):.1f} % faster, "
                f"{row['step_ms']:.3f} against {row['own_ms']:.3f} ms). Paste: {row['paste']}"]
    closest = min(rows, key=lambda r: r["ratio"])
    return [f"tune: {tried}; keep yours: none was resolved faster (the closest, {closest['setting']}, "
            f"{closest['ratio']:.3f}x [{closest['ci_lo']:.3f}, {closest['ci_hi']:.3f}])"]


def finite(result):
    """Whether every number of the result is finite (no nan reaches a sentence)."""
    return all(math.isfinite(row[c]) for row in result["settings"] for c in ("ratio", "ci_lo", "ci_hi"))


def progress(samples, at, rounds, setting):
    """The line said after a setting's block: its steps' and the job's own steps' medians this round."""
    mine = {k: [ms for kind, *_, ms in samples if kind == k] for k in ("tune", "tune-own")}
    return (f"probe: tune round {at + 1}/{rounds}, {setting.key}: {statistics.median(mine['tune']):.3f} ms against "
            f"yours {statistics.median(mine['tune-own']):.3f} ms (this rank's medians)")


def contender(key):
    """A setting's name as an ob-compare contender (letters, digits and _ kept, the rest -: bucket_cap_mb-2-5)."""
    return "".join(c if c.isalnum() or c == "_" else "-" for c in key)


def held_against(job, tuned, compared):
    """The tuner's verdict held against fresh processes: `tuned` is probe.json's "tune", `compared` ob-compare's
    rows ({contender: (ratio, lo, hi)} against the job's own, "own"). One row: the setting picked (the job's own where
    it kept yours), its claimed and measured ratios, the fastest setting by the fresh processes, and whether the pick
    is within 3 % of it and its claim within 5 % of the measurement (or the measurement inside the claim's interval)."""
    rows = {row["setting"]: row for row in tuned["settings"]}
    picked = tuned["best"]
    claim = (rows[picked]["ratio"], rows[picked]["ci_lo"], rows[picked]["ci_hi"]) if picked else (1.0, 1.0, 1.0)
    measured = compared[contender(picked)] if picked else (1.0, 1.0, 1.0)
    fastest = min(compared, key=lambda name: compared[name][0])
    return {"job": job, "picked": picked or "yours", "claimed_ratio": claim[0], "claimed_ci_lo": claim[1],
            "claimed_ci_hi": claim[2], "measured_ratio": measured[0], "measured_ci_lo": measured[1],
            "measured_ci_hi": measured[2], "fastest": fastest, "fastest_ratio": compared[fastest][0],
            "pick_over_fastest": measured[0] / compared[fastest][0],
            "within_3pct_of_fastest": measured[0] / compared[fastest][0] <= 1.03,
            "claim_error": claim[0] / measured[0] - 1,
            "claim_holds": abs(claim[0] / measured[0] - 1) <= 0.05 or claim[1] <= measured[0] <= claim[2]}
