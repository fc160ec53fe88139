#!/usr/bin/env python3
"""The planner's prediction checked against measured steps at another rank count: for every overlapped row of the
given phase 4 summaries, the step that a calibration of the same model (made on fewer ranks, e.g. 2 GPUs) predicts
for the row's rank count and plan (phase4_predict: the row's strategy and bucket caps, or the best plan for a
--plan auto row), beside the measured step, and the error = measured / predicted - 1. Writes the table as CSV and
prints it; exits 2, naming it, for a row whose model no calibration holds.

On a slower link (a row whose `transport` column is not the calibration's nvlink, or whose ranks span emulated nodes:
`nodes` above 1): --links-from names phase 4's comm-only sweeps over bucket sizes on that transport and layout
(`--mode comm --transport T --sweep bucket-mb=...`, or `--emulate-nodes N`), fitted as step = buckets * alpha +
gradient bytes / beta and turned into a ring's link (bandwidth beta * 2 (n - 1) / n, latency alpha / (n - 1) per
hop, n the sweep's ranks); the prediction is given that link between the nodes (`--gpus-per-node` ranks / nodes: 1
on a slower transport) and the calibration's own within them; the table names the fit.

Within the calibration's own link on more ranks than it was made on, --comm-from names phase 4's comm-only sweeps on
the measured runs' ranks, one per strategy: each bucket size's time there replaces the calibrated one scaled (the
rise of the bus bandwidth with the rank count is the fabric's, not in the calibration; METRICS.md "The planner").

Usage: check_prediction.py --calibrations A.calibration.json [B ...] --measured run.csv [...] [--links-from comm.csv
       ...] [--comm-from comm-nccl.csv ...] --csv check.csv
"""

import math
import pathlib
import tempfile

import pandas as pd

from overlap_bench.core import ob_csv
from overlap_bench.core import inputs
from overlap_bench.core import ob_tool
from overlap_bench.core import ob_metrics
from overlap_bench.planner import predict

COLUMNS = ["hidden", "layers", "batch", "graph", "ranks", "plan", "sync", "bucket_mb", "first_bucket_mb", "transport",
           "nodes", "link", "measured_ms", "predicted_ms", "predicted_sync", "error", "calibrated_ranks", "calibration"]
CALIBRATED = "nvlink"  # the transport calibrations are made on (phase 4's default)


def calibrations_by_model(paths):
    """(hidden, layers, batch, graph) -> (calibration path, its rank count, its strategies); a calibration without
    `graph` was measured eagerly."""
    found = {}
    for path in paths:
        try:
            data = inputs.load_json(path, "--calibrations", schema="calibration")
            model = data["model"]
            key = (int(model["hidden"]), int(model["layers"]), int(model["batch"]), bool(model.get("graph", False)))
            found[key] = (pathlib.Path(path), int(data["ranks"]), {s["sync"] for s in data["strategies"]})
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ob_tool.UsageError(f"--calibrations: '{path}' is invalid: not a phase 4 calibration ({error})")
    return found


def layout_of(frame):
    """Each row's (transport, nodes): the calibration's own is (nvlink, 1)."""
    transport = frame["transport"].fillna(CALIBRATED) if "transport" in frame else pd.Series(CALIBRATED, frame.index)
    nodes = pd.to_numeric(frame["nodes"], errors="coerce").fillna(1) if "nodes" in frame else pd.Series(1, frame.index)
    return list(zip(transport.astype(str), nodes.astype(int)))


def link_fit_of(path):
    """((transport, nodes), ranks, alpha ms per bucket, beta GB/s) of a phase 4 comm-only sweep over bucket sizes on
    one transport and layout: step = buckets * alpha + bytes / beta."""
    comm = ob_csv.load_summary(path)
    comm = comm[comm["mode"] == "comm"]
    fit = None
    layouts = set(layout_of(comm))
    if len(layouts) == 1 and {"buckets", "grad_mb", "ranks"} <= set(comm.columns):
        fit = ob_metrics.link_fit(comm["buckets"].astype(float), comm["time_ms_p50"].astype(float),
                                  float(comm["grad_mb"].iloc[0]) * (1 << 20))
    if fit is None:
        raise ob_tool.UsageError(f"--links-from: '{path}' is invalid: a comm-only sweep over bucket sizes on one "
                                "--transport and --emulate-nodes (two bucket counts at least), fitting buckets * alpha "
                                "+ bytes / beta")
    return layouts.pop(), int(comm["ranks"].iloc[0]), fit[0], fit[1]


def link_of(path):
    """((transport, nodes), phase4_predict's link NAME:GBPS:LATENCY_US): the sweep's fit taken apart as phase4_predict
    puts a link together (tools/predict_comm.cpp): 2 (n - 1) / n of the bytes per rank, and log2(n) hops of latency,
    its tree's, which it takes wherever ranks span a link (the ring's bandwidth term, fewer hops). Taken apart as a
    ring's n - 1 hops, a 4-rank fit came back with two thirds of its latency: 2 x 2 emulated nodes predicted 10 % fast
    at 33 buckets a step."""
    (transport, nodes), n, alpha, beta = link_fit_of(path)
    name = transport if nodes == 1 else f"{transport}-{nodes}nodes"
    return (transport, nodes), f"{name}:{beta * 2 * (n - 1) / n:.4g}:{alpha * 1e3 / math.log2(n):.4g}"


def comm_table_of(path):
    """(strategy, ranks, phase4_predict's --comm) of a phase 4 comm-only sweep over bucket sizes on the calibrated
    transport and one node (one strategy and rank count, the first bucket's cap fixed and among the sizes): a size's
    time per bucket is (step - the first bucket's time) * size / (gradient - the first bucket), the first bucket's
    from the sweep's step in buckets of its size."""
    comm = ob_csv.load_summary(path)
    comm = comm[comm["mode"] == "comm"]
    needed = {"buckets", "grad_mb", "ranks", "bucket_mb", "first_bucket_mb", "sync", "time_ms_p50"}
    one = (not comm.empty and needed <= set(comm.columns) and set(layout_of(comm)) == {(CALIBRATED, 1)}
           and all(comm[c].nunique() == 1 for c in ("sync", "ranks", "first_bucket_mb", "grad_mb")))
    first = float(comm["first_bucket_mb"].iloc[0]) if one else math.nan
    equal = comm[comm["bucket_mb"].astype(float) == first] if one else comm.iloc[0:0]
    if equal.empty or comm["bucket_mb"].nunique() < 2:
        raise ob_tool.UsageError(f"--comm-from: '{path}' is invalid: a comm-only sweep over bucket sizes of one "
                                 "strategy on one node of the calibrated transport, --first-bucket-mb among its sizes")
    grad, sync, ranks = float(comm["grad_mb"].iloc[0]), str(comm["sync"].iloc[0]), int(comm["ranks"].iloc[0])
    if not first < grad:  # the other buckets' share is of the gradient past the first bucket
        raise ob_tool.UsageError(f"--comm-from: '{path}' is invalid: --first-bucket-mb {first:g} below the "
                                 f"gradient (grad_mb {grad:g})")
    first_ms = float(equal["time_ms_p50"].iloc[0]) * first / grad
    times = {first: first_ms}
    for size, step in zip(comm["bucket_mb"].astype(float), comm["time_ms_p50"].astype(float)):
        if size != first:
            times[size] = (step - first_ms) * size / (grad - first)
    return sync, ranks, f"{sync}@{ranks}:" + ",".join(f"{m:g}={t:.6g}" for m, t in sorted(times.items()))


def comm_args(tables, ranks, syncs):
    """phase4_predict's --comm options for `ranks` ranks, of the strategies `syncs` a calibration holds."""
    return [word for sync, n, text in tables if n == ranks and sync in syncs for word in ("--comm", text)]


def link_fits(paths):
    """(transport, nodes) -> phase4_predict's link, fitted from comm-only sweeps on it."""
    return dict(link_of(path) for path in paths)


def predicted(predictor, calibration, row, link, nodes=1, comm=()):
    """phase4_predict's step for the row's rank count: its plan (strategy and caps), or the best for plan auto; over
    `link` between its `nodes` nodes (between every two ranks for one node on a slower transport) where one is given;
    `comm`: --comm options (strategies' bucket times measured on the row's ranks)."""
    with tempfile.TemporaryDirectory() as work:
        csv = pathlib.Path(work) / "p.csv"
        per_node = int(row["ranks"]) // nodes if nodes > 1 else 1
        command = [predictor, "--calibration", str(calibration), "--ranks", str(int(row["ranks"])), "--links",
                   link or "ib400", "--csv", str(csv), *comm] + (["--gpus-per-node", str(per_node)] if link else [])
        if row["plan"] != "auto":
            command += ["--sync", row["sync"], "--bucket-mb", str(row["bucket_mb"]),
                        "--first-bucket-mb", str(row["first_bucket_mb"])]
        predict.run_predictor(command)
        first = pd.read_csv(csv).iloc[0]
        return float(first["predicted_ms"]), first["sync"]


def overlap_rows(path):
    frame = ob_csv.load_summary(path)
    # Summaries from before --plan and --sync existed ran bucket caps on NCCL's all-reduce.
    frame = frame.assign(**{c: frame[c] if c in frame else v for c, v in (("plan", "caps"), ("sync", "nccl"))})
    needed = ["hidden", "layers", "batch", "bucket_mb", "first_bucket_mb"]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ob_tool.UsageError(f"{path}: not a phase 4 summary (no {', '.join(missing)} column)")
    rows = frame[frame["mode"] == "overlap"].copy()
    if rows.empty:
        raise ob_tool.UsageError(f"{path}: no overlap rows")
    for column in needed:  # numbers (an empty bucket_mb: a plan cut into chunks, left out below)
        values = pd.to_numeric(rows[column], errors="coerce")
        bad = rows.index[values.isna() & rows[column].notna()]
        if len(bad):
            raise ob_tool.UsageError(f"{path}: column '{column}', row {bad[0] + 1}: '{rows.loc[bad[0], column]}' is "
                                    "not a number")
        rows[column] = values
    bad = rows.index[~(rows["bucket_mb"].isna() | rows["bucket_mb"].between(1e-6, 1e6))
                     | ~(rows["first_bucket_mb"].isna() | rows["first_bucket_mb"].between(1e-6, 1e6))
                     | ~rows["ranks"].between(2, 1 << 20) | (rows["ranks"] != rows["ranks"].round())]
    if len(bad):
        raise ob_tool.UsageError(f"{path}: row {bad[0] + 1}: bucket caps in [1e-06, 1e+06] MiB and a whole rank count "
                                "of at least 2 are predicted; it holds bucket_mb "
                                f"{rows.loc[bad[0], 'bucket_mb']}, ranks {rows.loc[bad[0], 'ranks']}")
    rows["graph"] = rows["graph"].astype(bool) if "graph" in rows else False
    rows["layout"] = layout_of(rows)
    return rows


def check(calibrations, measured, predictor, links=(), comm_from=()):
    """The table, and how many rows were left out: plans cut into equal chunks (--chunks, plan=layer), which
    phase4_predict does not take."""
    by_model = calibrations_by_model(calibrations)
    fits = link_fits(links)
    tables = [comm_table_of(path) for path in comm_from]
    held = set().union(*(syncs for _, _, syncs in by_model.values()))
    for path, (sync, _, _) in zip(comm_from, tables):
        if sync not in held:
            raise ob_tool.UsageError(f"--comm-from: '{path}' is invalid: no calibration holds its strategy '{sync}'")
    table, skipped = [], 0
    for path in measured:
        for _, row in overlap_rows(path).iterrows():
            if row["plan"] != "auto" and not math.isfinite(float(row["bucket_mb"])):
                skipped += 1
                continue
            key = (int(row["hidden"]), int(row["layers"]), int(row["batch"]), bool(row["graph"]))
            if key not in by_model:
                raise ob_tool.UsageError(f"{path}: no calibration of H={key[0]} L={key[1]} B={key[2]}"
                                        f"{' --graph' if key[3] else ''} among --calibrations")
            calibration, calibrated, syncs = by_model[key]
            transport, nodes = row["layout"]
            if (transport, nodes) != (CALIBRATED, 1) and (transport, nodes) not in fits:
                raise ob_tool.UsageError(f"{path}: a run on --transport {transport}"
                                        f"{f' over {nodes} emulated nodes' if nodes > 1 else ''}, and no --links-from "
                                        "sweep on it")
            link = fits.get((transport, nodes), "")
            comm = comm_args(tables, int(row["ranks"]), syncs) if (transport, nodes) == (CALIBRATED, 1) else []
            ms, sync = predicted(predictor, calibration, row, link, nodes, comm)
            table.append(dict(zip(COLUMNS, [*key, int(row["ranks"]), row["plan"], row["sync"], row["bucket_mb"],
                                            row["first_bucket_mb"], transport, nodes, link, row["time_ms_p50"], ms,
                                            sync, row["time_ms_p50"] / ms - 1, calibrated, calibration.name])))
    unused = [path for path, (_, ranks, _) in zip(comm_from, tables) if ranks not in {r["ranks"] for r in table}]
    if unused:  # a measurement no row takes is a mistake to say, not to drop
        raise ob_tool.UsageError(f"--comm-from: '{unused[0]}' is invalid: no measured row of its rank count "
                                 f"({tables[comm_from.index(unused[0])][1]})")
    return pd.DataFrame(table, columns=COLUMNS), skipped


def main():
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("--calibrations", nargs="+", required=True, type=ob_tool.input_file,
                        help="calibration JSON files (phase4 --calibrate)")
    parser.add_argument("--measured", nargs="+", required=True, type=ob_tool.input_file.path,
                        help="phase 4 summary CSVs")
    parser.add_argument("--links-from", nargs="+", default=[], type=ob_tool.input_file.path,
                        help="phase 4 comm-only sweeps over bucket sizes, one per slower --transport the measured "
                             "runs used")
    parser.add_argument("--comm-from", nargs="+", default=[], type=ob_tool.input_file.path,
                        help="phase 4 comm-only sweeps over bucket sizes on the measured runs' ranks (one node, the "
                             "calibrated transport), one per strategy: its time per bucket there instead of the "
                             "calibrated one scaled")
    parser.add_argument("--csv", required=True, type=ob_tool.output_file().path, help="the table to write")
    parser.add_argument("--predictor", type=ob_tool.executable,
                        help="the phase4_predict binary (default: on PATH, or in build/)")
    args = parser.parse_args()
    if not args.csv.parent.is_dir():
        raise ob_tool.UsageError(f"--csv: '{args.csv}' is invalid: its directory must exist")
    ob_tool.require_outputs([("--csv", args.csv)], [("--calibrations", c) for c in args.calibrations]
                           + [("--measured", m) for m in args.measured]
                           + [("--links-from", m) for m in args.links_from]
                           + [("--comm-from", m) for m in args.comm_from])
    table, skipped = check(args.calibrations, args.measured, predict.find_predictor(args.predictor), args.links_from,
                           args.comm_from)
    ob_tool.write_text_atomic(args.csv, table.to_csv(index=False))
    shown = table[["hidden", "layers", "batch", "ranks", "plan", "sync", "bucket_mb", "transport", "nodes",
                   "measured_ms", "predicted_ms", "error"]]
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"check_prediction.py: {len(table)} rows in {args.csv}; {int((table['error'].abs() <= 0.10).sum())} "
          f"within 10 %" + (f"; {skipped} rows of chunked plans left out" if skipped else ""))
    return 0


def cli():
    """The console command (pyproject.toml) and `python3 check_prediction.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
