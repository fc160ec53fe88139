"""What the probe's finish() leaves (api.py): its files in the probe's folder (probe.json, probe.csv, tune.csv), the
split of its measured added time by its traces (ob-analyze, where the suite's trace reader runs), and its verdict in
words, never a number that is not finite. Torch is not imported here."""
import json
import math
import shutil

import overlap_bench.probe.tune as tune


def write(folder, result, steps, settings):
    """probe.json (the measurement), probe.csv (every step: kind, pass, setting, the slowest rank's ms) and, where the
    tuner ran, tune.csv (every setting tried) into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "probe.json").write_text(json.dumps(result, indent=2) + "\n")
    (folder / "probe.csv").write_text("kind,pass,setting,ms\n" + "".join(
        f"{k},{p},{settings[s].key if s >= 0 else ''},{t:.6f}\n" for k, p, s, t in steps))
    if settings:
        (folder / "tune.csv").write_text(tune.csv_text(result["tune"]))


def commit():
    """The suite's commit (ob_tool.commit_id, standard library only), "unknown" where it cannot be told."""
    try:
        from overlap_bench.core import ob_tool

        return ob_tool.commit_id()
    except Exception:  # noqa: BLE001 -- metadata only: the measurement never fails for it
        return "unknown"


def analyse(folder, result):
    """ob-analyze on the probe's folder (rank 0): its parts scaled to the measured total; None where the suite's
    analysis (pandas, numpy) is not installed or the job ran no GPU kernel (a CPU job: no trace to split)."""
    if not any(folder.glob("job.rank*.trace.json.gz")):
        return None
    try:
        from overlap_bench.trace import analyze
    except ImportError as error:
        return {"error": f"the split needs the suite's trace reader ({error.name} is not installed): "
                         f"ob-analyze {folder} later"}
    try:
        parts = analyze.analyse_probe(folder, folder / "analysis", result)
    except Exception as error:  # noqa: BLE001 -- the measurement stands; the split says why it is missing
        shutil.rmtree(folder / "analysis", ignore_errors=True)
        return {"error": f"the split failed: {str(error).splitlines()[0] if str(error) else type(error).__name__}"}
    return parts


def sentences(result):
    """The probe's verdict in words (no number that is not finite: such a measurement is said so)."""
    numbers = ("step_ms", "compute_only_step_ms", "added_ms", "added_ci_lo_ms", "added_ci_hi_ms", "perturbation")
    if not all(math.isfinite(result[k]) for k in numbers) or result["compute_only_step_ms"] <= 0:
        lines = [f"probe: {result['ranks']} rank{'s' * (result['ranks'] != 1)} on {result['device']}: no added "
                 "time measured (a step's time was not a finite, positive number)"]
    else:
        lines = [f"probe: {result['ranks']} rank{'s' * (result['ranks'] != 1)} on {result['device']}: the step took "
                 f"{result['step_ms']:.3f} ms, its compute-only step {result['compute_only_step_ms']:.3f} ms (medians "
                 f"of the slowest rank, unprofiled): data parallelism added {result['added_ms']:.3f} ms "
                 f"[{result['added_ci_lo_ms']:.3f}, {result['added_ci_hi_ms']:.3f}] a step "
                 f"({100 * result['added_ms'] / result['compute_only_step_ms']:.1f} % of the compute-only step); the "
                 f"profiler made the traced step {result['perturbation']:.3f}x the unprofiled one"]
    analysis = result.get("analysis")
    if analysis and "parts" in analysis:
        lines.append("of the added time: " + "; ".join(f"{part['part']} {part['scaled_ms']:.3f} ms"
                                                       for part in analysis["parts"] if part["adds"]) +
                     f" (the trace's parts scaled by {analysis['scale']:.3f} to the measured total)")
    elif analysis and "error" in analysis:
        lines.append(analysis["error"])
    if "tune" in result:
        lines += tune.sentences(result["tune"])
    if not result["replicas_agree"]:
        lines.append("the replicas DISAGREE after the probe")
    return lines
