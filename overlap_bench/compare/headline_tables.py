"""The headline's tables and figure from a finished ob-compare folder (overlap_bench/compare/headline.py): per
configuration the fastest phase 4 contender against DDP at its best cap with its factors, the planner's plan against
the fastest strategy, FSDP2 against DDP, the step against its floor, and the definitions checked (METRICS.md, "The
headline"). """
import json
import math
import pathlib

import numpy as np
import pandas as pd

from overlap_bench.core import compare_stats
from overlap_bench.compare import headline_why
from overlap_bench.core import figures
from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool
from overlap_bench.core import packs

OUTPUTS = ["headline.csv", "headline.contenders.csv", "headline.meta.json", "headline.png", "prediction-check.csv",
           "bounds.csv"]
P4_PROCESS = "p4"
DDP_PROCESS = "ddp"
BOUND_COLUMNS = ["config", "round", "sync", "plan", "bucket_mb", "bound_kind", "bound_ms", "overlap_ms", "compute_ms",
                 "enqueue_share", "bound_over_step", "above"]
WIDE = 0.02  # the target: a ratio's interval within +-2 %


def shape(text):
    """'4096x16x512' -> (4096, 16, 512), or None."""
    parts = str(text).split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        return None
    return tuple(int(p) for p in parts)


def floors(runs, rounds, config, best):
    """Per round: max(the best contender's compute-only step, the fastest comm-only step of the configuration's
    gradient among phase 4's strategies in the same process): no schedule of this work can beat it."""
    h, l, b = shape(config)
    values = []
    for round_index in sorted(rounds["round"].unique()):
        frame = ob_csv.load_summary(runs / f"r{round_index}-{P4_PROCESS}.csv")
        comm = frame[(frame["mode"] == "comm") & (frame["hidden"] == h) & (frame["layers"] == l) &
                     (frame["batch"] == b)]
        mine = rounds[(rounds["round"] == round_index) & (rounds["contender"] == best)]
        values.append(max(float(mine["compute_ms"].iloc[0]), float(comm["time_ms_p50"].min())))
    return values


def relative_spread(row):
    """A row's median's relative 95 % interval half-width (time_ms_p50_ci_rel), 0 where it has none."""
    spread = row.get("time_ms_p50_ci_rel", 0.0)
    return spread if spread == spread else 0.0


def bound_above(point):
    """Whether one point's schedule bound (bound_kind bound, not a model) lies above its overlapped step beyond both
    intervals (phase 4's rule, driver/bound_rows.cpp): the step's, and the bound's, which phase 4 writes as the larger
    of its inputs' (the compute-only and comm-only runs' medians it is made of); for a summary written before it, the
    same from those rows."""
    bound = point[(point["mode"] == "bound") & (point.get("bound_kind", "bound") == "bound")]
    overlap = point[point["mode"] == "overlap"]
    if not len(bound) or not len(overlap):
        return False
    step = overlap.iloc[0]
    bound_spread = bound["time_ms_p50_ci_rel"].iloc[0] if "time_ms_p50_ci_rel" in bound else math.nan
    if bound_spread != bound_spread:
        inputs = point[point["mode"].isin(["compute", "comm"])]
        bound_spread = max([relative_spread(row) for _, row in inputs.iterrows()], default=0.0)
    return bool(bound["time_ms_p50"].iloc[0] * (1 - bound_spread) > step["time_ms_p50"] * (1 + relative_spread(step)))


def bound_rows(runs, rounds, config):
    """Every phase 4 point's bound row beside its overlapped and compute-only steps, per round (bounds.csv: METRICS.md,
    "The headline"): `enqueue_share` the share of the overlapped step for which the host was still enqueuing its
    collectives, `above` the bound above its step beyond both intervals (bound_above)."""
    h, l, b = shape(config)
    rows = []
    for round_index in sorted(rounds["round"].unique()):
        frame = ob_csv.load_summary(runs / f"r{round_index}-{P4_PROCESS}.csv")
        frame = frame[(frame["hidden"] == h) & (frame["layers"] == l) & (frame["batch"] == b)]
        keys = [c for c in ("sync", "plan", "bucket_mb") if c in frame.columns]
        for key, point in frame.groupby(keys, dropna=False):
            time = dict(zip(point["mode"], point["time_ms_p50"]))
            if "bound" not in time or "overlap" not in time:
                continue
            overlap = point[point["mode"] == "overlap"].iloc[0]
            kind = point.loc[point["mode"] == "bound", "bound_kind"].iloc[0] if "bound_kind" in point else "bound"
            enqueue = overlap.get("enqueue_span_ms_p50", math.nan)
            rows.append({"config": config, "round": int(round_index), **dict(zip(keys, key)), "bound_kind": kind,
                         "bound_ms": time["bound"], "overlap_ms": time["overlap"],
                         "compute_ms": time.get("compute", math.nan),
                         "enqueue_share": enqueue / time["overlap"], "bound_over_step": time["bound"] / time["overlap"],
                         "above": int(bound_above(point))})
    return rows


def best_bound(points, rounds, best, floor):
    """The best contender's own schedule bound against its floor and its step (why a step misses its floor: the
    schedule's dependencies, or what the run adds to them): per round, the bound row of the phase 4 point whose
    overlapped median is the contender's step that round; medians over rounds of the bound, of bound / floor and of
    step / bound, and the bound's kind (`bound`, or `model` where the host paced the step). Empty without bound rows."""
    mine = rounds[rounds["contender"] == best].sort_values("round")
    bounds, kinds, over_floor, over_bound = [], [], [], []
    for (_, step), lowest in zip(mine.iterrows(), floor):
        match = [p for p in points if p["round"] == step["round"] and math.isclose(p["overlap_ms"], step["time_ms"],
                                                                                 rel_tol=1e-9)]
        if match:
            bounds.append(match[0]["bound_ms"])
            kinds.append(match[0]["bound_kind"])
            over_floor.append(match[0]["bound_ms"] / lowest)
            over_bound.append(step["time_ms"] / match[0]["bound_ms"])
    if not bounds:
        return {}
    return {"best_bound_ms": float(np.median(bounds)), "best_bound_kind": max(set(kinds), key=kinds.count),
            "bound_vs_floor": float(np.median(over_floor)), "best_vs_bound": float(np.median(over_bound))}


def replayed(runs, process):
    """1 where `process`'s first run replayed its steps from CUDA graphs (its summary's `graph` column: bench_ddp.py
    --graph, phase 4 --graph), else 0 (also where it did not run)."""
    path = ob_csv.stored(runs / f"r0-{process}.csv")
    if path is None:
        return 0
    frame = ob_csv.load_summary(path)
    return int("graph" in frame and bool((frame["graph"] == 1).any()))


# ob-compare's columns the headline reads (compare.csv): checked before any is used
CONTENDER_COLUMNS = ("label", "process", "median_ms", "median_ci_rel", "unstable", "ratio", "ratio_ci_lo",
                     "ratio_ci_hi", "verdict", "compute_ratio", "compute_ci_lo", "compute_ci_hi", "overhead_ratio",
                     "overhead_ci_lo", "overhead_ci_hi", "carried_by", "overhead", "beats_compute", "baseline_pick")


def tables(compare_dir, spec, seed):
    """(headline, contenders, bounds): the per-configuration table, every contender against the experiment's baseline,
    and every phase 4 point's bound row (bound_rows)."""
    compare_dir = pathlib.Path(compare_dir)
    table = packs.read_csv(compare_dir / "compare.csv", "--analyze", ("baseline_spec", "group", *CONTENDER_COLUMNS))
    rounds = packs.read_csv(compare_dir / "compare.rounds.csv", "--analyze", ("round", "contender", "time_ms"))
    runs = compare_dir / "runs"
    against = table[table["baseline_spec"] == spec["baseline"]].copy()
    against["config"] = against["group"]
    contenders = against[["config", *CONTENDER_COLUMNS]]
    steps = {n: g.sort_values("round")["time_ms"].tolist() for n, g in rounds.groupby("contender")}
    rows, bounds = [], []
    ddp_graph = replayed(runs, DDP_PROCESS)
    for config in spec["configs"]:
        mine = against[against["config"] == config]
        p4 = mine[mine["process"] == P4_PROCESS]
        if p4.empty:
            continue
        best = p4.loc[p4["median_ms"].idxmin()]
        floor = floors(runs, rounds, config, best["contender"])
        points = bound_rows(runs, rounds, config)
        vs_floor, floor_lo, floor_hi, _ = compare_stats.bootstrap_ratios(
            {"best": steps[best["contender"]], "floor": floor}, "best", ["floor"], seed)
        ddp = mine.loc[mine["process"] == DDP_PROCESS, "contender"].tolist()
        # the floor against DDP at its best cap: no phase 4 schedule of this work goes below it
        floor_ddp = compare_stats.bootstrap_ratios({"floor": floor, **{n: steps[n] for n in ddp}}, "floor", ddp,
                                                   seed)[:3] if ddp else (math.nan,) * 3
        floor_ddp = dict(zip(("floor_vs_ddp", "floor_vs_ddp_lo", "floor_vs_ddp_hi"), floor_ddp))
        row = {"config": config, "best": best["label"], "best_ms": best["median_ms"], "ddp_pick": best["baseline_pick"],
               "best_vs_ddp": best["ratio"], "best_vs_ddp_lo": best["ratio_ci_lo"],
               "best_vs_ddp_hi": best["ratio_ci_hi"], "ddp_graph": ddp_graph,
               "verdict": best["verdict"], "compute_ratio": best["compute_ratio"],
               "compute_ci_lo": best["compute_ci_lo"], "compute_ci_hi": best["compute_ci_hi"],
               "overhead_ratio": best["overhead_ratio"], "overhead_ci_lo": best["overhead_ci_lo"],
               "overhead_ci_hi": best["overhead_ci_hi"], "carried_by": best["carried_by"],
               "floor_ms": float(np.median(floor)), "best_vs_floor": vs_floor, "best_vs_floor_lo": floor_lo,
               "best_vs_floor_hi": floor_hi, **floor_ddp,
               **best_bound(points, rounds, best["contender"], floor)}
        planned = p4[p4["label"] == "planned"]
        if len(planned):
            chosen = ob_csv.load_summary(runs / f"r0-{P4_PROCESS}.csv")
            h, l, b = shape(config)
            pick = chosen[(chosen["mode"] == "overlap") & (chosen["plan"] == "auto") & (chosen["hidden"] == h) &
                          (chosen["layers"] == l) & (chosen["batch"] == b)]
            fixed = p4[p4["label"] != "planned"]
            # the planned plan over the fastest fixed plan, chosen again in every resample of the rounds
            ratio, lo, hi, _ = compare_stats.bootstrap_ratios(
                steps, planned["contender"].iloc[0], fixed["contender"].tolist(), seed)
            row.update({"planned_sync": pick["sync"].iloc[0] if len(pick) else "",
                        "planned_buckets": int(pick["buckets"].iloc[0]) if len(pick) else -1,
                        "planned_vs_best_strategy": ratio, "planned_vs_best_strategy_lo": lo,
                        "planned_vs_best_strategy_hi": hi})
        fsdp = mine[mine["label"] == "fsdp2"]
        if len(fsdp):
            row.update({"fsdp2_vs_ddp": fsdp["ratio"].iloc[0], "fsdp2_vs_ddp_lo": fsdp["ratio_ci_lo"].iloc[0],
                        "fsdp2_vs_ddp_hi": fsdp["ratio_ci_hi"].iloc[0]})
        shown = mine[mine["verdict"] != "baseline"]
        bounds += points
        row.update({"contenders": len(mine), "beats_compute": int(mine["beats_compute"].sum()),
                    "bounds_above": sum(point["above"] for point in points),
                    "narrow_share": float(((shown["ratio_ci_hi"] - shown["ratio_ci_lo"]) / 2 / shown["ratio"]
                                           <= WIDE).mean()) if len(shown) else math.nan})
        rows.append(row)
    return pd.DataFrame(rows), contenders.reset_index(drop=True), pd.DataFrame(bounds).reindex(columns=BOUND_COLUMNS)


PREDICTION_COLUMNS = ["config", "label", "plan", "predicted_sync", "ranks", "calibrated_ranks", "calibrated_gpu",
                      "predicted_ms"]


def load_predictions(path):
    """predictions.csv (ob-headline --predict-from), its columns and numbers checked: a usage error naming the file
    otherwise."""
    table = packs.read_csv(path, "--predictions", most=16 << 20)
    missing = [c for c in PREDICTION_COLUMNS if c not in table.columns]
    if missing or table.empty:
        raise ob_tool.UsageError(f"--predictions: '{path}' is invalid: not ob-headline's predictions.csv (no "
                                f"{(missing or ['rows'])[0]})")
    values = pd.to_numeric(table["predicted_ms"], errors="coerce")
    if not (values > 0).all() or not values.apply(math.isfinite).all():
        raise ob_tool.UsageError(f"--predictions: '{path}' is invalid: predicted_ms holds a value that is not a "
                                "positive number")
    return table


def prediction_check(contenders, predictions):
    """prediction-check.csv: each prediction made before the run (ob-headline --predict-from) beside the contender
    it predicts, measured: its median over rounds, and error = measured / predicted - 1 (the planner's plan: the
    measured one is the plan this machine's own calibration chose, the predicted one the plan the other
    calibration would choose)."""
    measured = contenders.set_index(["config", "label"])["median_ms"]
    rows = predictions[predictions.set_index(["config", "label"]).index.isin(measured.index)].copy()
    rows["measured_ms"] = [measured.loc[(c, l)] for c, l in zip(rows["config"], rows["label"])]
    rows["error"] = rows["measured_ms"] / rows["predicted_ms"] - 1
    return rows[["config", "label", "plan", "predicted_sync", "ranks", "calibrated_ranks", "calibrated_gpu",
                 "predicted_ms", "measured_ms", "error"]].reset_index(drop=True)


def sentence(row):
    """'4096x16x512: sharded-ce is faster than DDP at its best cap (ddp-64) by 35 %: 0.647x [0.642, 0.649]; compute
    0.79x, overlap overhead 0.82x: the overhead carries it; 1.12x its floor (its schedule's bound 1.05x), the floor
    0.72x DDP's best'."""
    words = {"faster": "faster than", "slower": "slower than", "not resolved": "not resolved against"}
    by = f" by {abs(1 - row['best_vs_ddp']) * 100:.0f} %" if row["verdict"] in ("faster", "slower") else ""
    replayed = " replayed from CUDA graphs" if row.get("ddp_graph", 0) == 1 else ""  # tables made before: eager
    text = (f"{row['config']}: {row['best']} is {words.get(row['verdict'], row['verdict'])} DDP{replayed} at its "
            f"best cap ({row['ddp_pick']}){by}: {row['best_vs_ddp']:.3f}x [{row['best_vs_ddp_lo']:.3f}, "
            f"{row['best_vs_ddp_hi']:.3f}]")
    if math.isfinite(row["compute_ratio"]):
        text += f"; compute {row['compute_ratio']:.3f}x, overlap overhead {row['overhead_ratio']:.3f}x"
        if isinstance(row["carried_by"], str) and row["carried_by"]:
            text += f": the {row['carried_by']} carries it"
    text += f"; {row['best_vs_floor']:.3f}x its floor"
    if math.isfinite(row.get("bound_vs_floor", math.nan)):  # tables made before it had none
        text += f" (its schedule's {row['best_bound_kind']} {row['bound_vs_floor']:.3f}x)"
    if math.isfinite(row.get("floor_vs_ddp", math.nan)):
        text += f", the floor {row['floor_vs_ddp']:.3f}x DDP's best"
    if isinstance(row.get("planned_sync"), str) and row["planned_sync"]:
        text += (f"; the planner's plan ({row['planned_sync']}, {row['planned_buckets']} buckets) "
                 f"{row['planned_vs_best_strategy']:.3f}x")
        if math.isfinite(row.get("planned_vs_best_strategy_lo", math.nan)):  # tables made before it had none
            text += f" [{row['planned_vs_best_strategy_lo']:.3f}, {row['planned_vs_best_strategy_hi']:.3f}]"
        text += " the fastest strategy"
    return text


def figure(contenders, path):
    """Every contender's ratio to DDP at its best cap with its interval (dots), and its compute-only factor (x),
    one panel per configuration."""
    import matplotlib.pyplot as plt

    configs = list(dict.fromkeys(contenders["config"]))
    columns = min(3, len(configs))
    rows = math.ceil(len(configs) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.4 * rows), squeeze=False)
    for axis, config in zip(axes.flat, configs):
        part = contenders[contenders["config"] == config]
        y = np.arange(len(part))
        colours = [{"faster": "#2ca02c", "slower": "#d62728", "baseline": "#1f77b4"}.get(v, "#7f7f7f")
                   for v in part["verdict"]]
        axis.errorbar(part["ratio"], y, xerr=[part["ratio"] - part["ratio_ci_lo"], part["ratio_ci_hi"] - part["ratio"]],
                      fmt="none", ecolor="black", capsize=2)
        axis.scatter(part["ratio"], y, c=colours, zorder=3, s=16, label="step ratio")
        axis.scatter(part["compute_ratio"], y, marker="x", c="#555555", s=14, zorder=2, label="compute-only ratio")
        axis.axvline(1.0, color="#999999", linestyle="--")
        axis.set_yticks(y, part["label"], fontsize=8)
        axis.set_ylim(len(part) - 0.5, -0.5)
        axis.set_title(config, fontsize=9)
        axis.set_xlabel("time / DDP at its best cap", fontsize=8)
    for axis in list(axes.flat)[len(configs):]:
        axis.set_visible(False)
    axes.flat[0].legend(fontsize=7, loc="lower right")
    figures.save_figure(fig, path)


def write(compare_dir, out, spec, timing, predictions=None):
    """Writes the tables, metadata and figure into `out` (and prediction-check.csv where `predictions`, a frame of
    predictions.csv, is given) and prints a sentence per configuration."""
    compare_dir, out = pathlib.Path(compare_dir), pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    meta = packs.read_json(compare_dir / "compare.meta.json", "--analyze", schema="meta")
    if not isinstance(meta, dict) or not ob_tool.is_number(meta.get("seed"), 0, 2 ** 64, integer=True):
        raise ob_tool.UsageError(f"--analyze: '{compare_dir / 'compare.meta.json'}' is invalid: not ob-compare's "
                                 "metadata (an integer 'seed')")
    headline, contenders, bounds = tables(compare_dir, spec, meta["seed"])
    if headline.empty:
        raise ob_tool.UsageError(f"{compare_dir}: no phase 4 contender of the experiment's configurations in it")
    shown = contenders[contenders["verdict"] != "baseline"]
    width = (shown["ratio_ci_hi"] - shown["ratio_ci_lo"]) / 2 / shown["ratio"]
    summary = {"suite": "overlap-bench", "tool": "ob-headline", "commit": meta.get("commit"),
               "gpus": meta.get("gpus"), "ranks": meta.get("ranks"), "rounds": meta.get("rounds"),
               "date_utc": meta.get("date_utc"), "compare": str(compare_dir),
               "rows_within_2pct": float((width <= WIDE).mean()), "rows": int(len(shown)),
               "beats_compute": int(headline["beats_compute"].sum()),
               "bounds_above": int(headline["bounds_above"].sum()), **timing}
    if predictions is not None:
        check = prediction_check(contenders, predictions)
        ob_tool.write_text_atomic(out / "prediction-check.csv", check.to_csv(index=False))
        summary.update({"prediction_mean_abs_error": float(check["error"].abs().mean()),
                        "prediction_worst_abs_error": float(check["error"].abs().max()),
                        "predictions": int(len(check))})
        print(f"predictions made before this run: mean |error| {check['error'].abs().mean() * 100:.1f} %, worst "
              f"{check['error'].abs().max() * 100:.1f} % over {len(check)} rows")
    figure(contenders, out / "headline.png")
    ob_tool.write_text_atomic(out / "headline.contenders.csv", contenders.to_csv(index=False))
    ob_tool.write_text_atomic(out / "headline.meta.json", json.dumps(summary, indent=2, default=str) + "\n")
    ob_tool.write_text_atomic(out / "headline.csv", headline.to_csv(index=False))
    ob_tool.write_text_atomic(out / "bounds.csv", bounds.to_csv(index=False, float_format="%.6g"))
    last_round = int(packs.read_csv(compare_dir / "compare.rounds.csv")["round"].max())
    timeline = compare_dir / "runs" / f"r{last_round}-{P4_PROCESS}.timeline.csv"
    for path in headline_why.figures(timeline, out, headline, spec["strategies"]):
        print(f"why its best misses its floor: {path}")
    for _, row in headline.iterrows():
        print(sentence(row))
    print(f"{summary['rows_within_2pct'] * 100:.0f} % of {summary['rows']} ratios within +-2 %; "
          f"{summary['beats_compute']} step(s) below their own compute-only step; {summary['bounds_above']} bound "
          f"row(s) above their step" + (f"; {summary['wall_s']:.0f} s in all" if "wall_s" in summary else ""))
    return 0
