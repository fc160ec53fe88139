"""The probe's measured added time split by the trace (METRICS.md, "The probe"): the total is measured without the
profiler (the job's step minus its compute-only step, overlap_bench.probe), the trace only attributes it. The
trace's parts of one step (ob-analyze's overlap row: exposed communication beyond the wait for a later rank, that
wait, the compute kernels' slowdown beside collectives, the wrapper's own kernels, the host gaps) are scaled by one
factor so that they add up to the measured total; the factor and the profiler's perturbation (traced step over
unprofiled step) are reported beside them. The blocking communication (what a dependency proves cost the step) is a
share of the exposed communication, reported and scaled alike, and not added.
"""
import json
import math

# (part, the analysis row's columns that make it, whether it adds into the total)
PARTS = (("exposed communication", ("exposed_comm_ms", "-peer_wait_ms"), True),
         ("peer wait", ("peer_wait_ms",), True),
         ("compute slowdown", ("slowdown_ms",), True),
         ("wrapper kernels", ("wrapper_gpu_ms",), True),
         ("host gaps", ("host_comm_ms", "idle_added_ms"), True),
         ("blocking communication", ("blocking_comm_ms",), False))


def _checked(path, what, kind):
    """A JSON object of a probe's folder, read through the one JSON loader (inputs.load_json: size and nesting
    bounded) and checked against its declared schema (schemas/probe.schema.json, truth.schema.json: positive steps,
    each value inside its own interval, booleans that are booleans); a ValueError naming the file, the field and
    the rule where it does not hold."""
    from overlap_bench.core import inputs, ob_tool

    try:
        return inputs.load_json(path, "FOLDER", schema=kind)
    except (OSError, ob_tool.UsageError) as error:
        raise ValueError(f"{path}: not {what} ({str(error).split(' is invalid: ')[-1]})") from None


def load(path):
    """A probe's probe.json; a ValueError naming the file where it is not one."""
    return _checked(path, "a probe's result", "probe")


# The truth a probe is held against (truth.json: examples/probe_ddp.py --truth, ob-probe-suite), as ob-probe-table
# carries it.
TRUTH_NUMBERS = ("truth_step_ms", "truth_compute_ms", "truth_added_ms", "truth_ci_lo_ms", "truth_ci_hi_ms")


def _value(row, column):
    sign, name = (-1.0, column[1:]) if column.startswith("-") else (1.0, column)
    value = float(row.get(name, 0.0))
    return sign * (0.0 if math.isnan(value) else value)


def split(row, probe):
    """{"parts": [{part, traced_ms, scaled_ms, adds}], "traced_total_ms", "measured_ms", "scale", "perturbation"}:
    the trace's parts of `row` (the analysis' overlap row, a mapping) scaled to the probe's measured added time.
    Where the measured total is not above zero the scale is 0 (nothing to split); where the trace's parts add to
    nothing but the measured total is above zero, the scale is NaN and the parts are left as traced (the trace saw
    none of what the job added: said in words)."""
    # a part below zero (a slowdown of -0.001 ms: noise) is none, never scaled up with the rest
    parts = [{"part": name, "traced_ms": max(0.0, sum(_value(row, c) for c in columns)), "adds": adds}
             for name, columns, adds in PARTS]
    traced = sum(p["traced_ms"] for p in parts if p["adds"])
    measured = float(probe["added_ms"])
    scale = 0.0 if measured <= 0 else (measured / traced if traced > 0 else math.nan)
    for p in parts:
        p["scaled_ms"] = p["traced_ms"] * scale if not math.isnan(scale) else math.nan
    return {"parts": parts, "traced_total_ms": traced, "measured_ms": measured,
            "measured_ci_lo_ms": float(probe["added_ci_lo_ms"]), "measured_ci_hi_ms": float(probe["added_ci_hi_ms"]),
            "scale": scale, "perturbation": float(probe["traced_step_ms"]) / float(probe["step_ms"])}


def sentence(result):
    """The split in words."""
    head = (f"Measured without the profiler, data parallelism added {result['measured_ms']:.3f} ms a step "
            f"[{result['measured_ci_lo_ms']:.3f}, {result['measured_ci_hi_ms']:.3f}]; the profiler made the traced "
            f"step {result['perturbation']:.3f}x the unprofiled one")
    if result["scale"] == 0:
        return head + ": the measured added time is not above zero, so there is nothing to split"
    if math.isnan(result["scale"]):
        return head + ": the trace's parts add up to nothing, so it cannot say where the time went"
    adds = [p for p in result["parts"] if p["adds"]]
    blocking = next(p for p in result["parts"] if not p["adds"])
    return (head + ": of it " + "; ".join(f"{p['part']} {p['scaled_ms']:.3f} ms" for p in adds) +
            f" (the trace's {result['traced_total_ms']:.3f} ms scaled by {result['scale']:.3f} to the measured "
            f"total); {blocking['scaled_ms']:.3f} ms of the exposed communication provably blocked the compute")


# ob-probe-table's columns beyond the probe's own: the truth (examples/probe_ddp.py --truth) and the scaled parts
PART_COLUMNS = {"exposed communication": "exposed_ms", "peer wait": "peer_wait_ms", "compute slowdown": "slowdown_ms",
                "wrapper kernels": "wrapper_ms", "host gaps": "host_gaps_ms", "blocking communication": "blocking_ms"}


def table_row(folder):
    """One probe folder as a row: the probe's measurement, its truth where the folder holds one (truth.json), the
    split's scaled parts where it holds an analysis."""
    probe = load(folder / "probe.json")
    row = {"job": folder.name, "ranks": probe.get("ranks"), "backend": probe.get("backend", ""),
           "device": probe.get("device", ""), "step_ms": probe["step_ms"],
           "compute_only_step_ms": probe["compute_only_step_ms"], "added_ms": probe["added_ms"],
           "added_ci_lo_ms": probe["added_ci_lo_ms"], "added_ci_hi_ms": probe["added_ci_hi_ms"],
           "perturbation": probe["traced_step_ms"] / probe["step_ms"], "probe_steps": probe.get("probe_steps"),
           "replicas_agree": probe.get("replicas_agree")}
    truth_path = folder / "truth.json"
    if truth_path.is_file():
        truth = _checked(truth_path, "a probe's truth", "truth")
        row.update({k: truth.get(k) for k in (*TRUTH_NUMBERS, "error", "within_5pct")})
    parts_path = folder / "analysis" / "analysis.parts.csv"
    if parts_path.is_file():
        import csv

        with open(parts_path, newline="") as source:
            for part in csv.DictReader(source):
                if part["part"] in PART_COLUMNS:
                    row[PART_COLUMNS[part["part"]]] = float(part["scaled_ms"])
    return row, probe


def table_main(argv=None):
    """ob-probe-table FOLDER... --csv OUT: probe folders as one table, with its metadata beside (OUT.meta.json)."""
    import pathlib
    import sys
    import time

    import pandas as pd

    from overlap_bench.core import ob_tool

    parser = ob_tool.ArgumentParser(description=table_main.__doc__)
    parser.add_argument("folders", nargs="+", metavar="FOLDER", type=ob_tool.input_folder,
                        help="probe folders (each holding probe.json)")
    parser.add_argument("--csv", required=True, type=ob_tool.output_file(".csv"),
                        help="the table to write (never one of the files it reads: refused)")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.csv)
    if out.suffix != ".csv" or not out.parent.is_dir():
        raise ob_tool.UsageError(f"--csv: '{out}' is invalid: a .csv file in an existing folder")
    meta_path = out.with_suffix(".meta.json")
    ob_tool.require_outputs([("--csv", out), ("--csv", meta_path)],
                            [("FOLDER", pathlib.Path(f) / name) for f in args.folders
                             for name in ("probe.json", "truth.json", "analysis/analysis.parts.csv")])
    rows, probes = [], []
    for folder in map(pathlib.Path, args.folders):
        try:
            row, probe = table_row(folder)
        except (ValueError, OSError) as error:
            raise ob_tool.UsageError(str(error)) from None
        rows.append(row)
        probes.append(probe)
    meta = {"suite": "overlap-bench", "tool": "ob-probe-table", "commit": ob_tool.commit_id(),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command_line": sys.argv,
            "probes": [{k: p.get(k) for k in ("commit", "date_utc", "device", "torch", "ranks", "backend",
                                               "command_line", "clock")} for p in probes]}
    ob_tool.write_text_atomic(meta_path, json.dumps(meta, indent=2) + "\n")
    ob_tool.write_text_atomic(out, pd.DataFrame(rows).to_csv(index=False))
    return 0


def cli():
    """The console command ob-probe-table."""
    from overlap_bench.core import ob_tool

    raise SystemExit(ob_tool.main_guard(table_main))


if __name__ == "__main__":
    cli()
