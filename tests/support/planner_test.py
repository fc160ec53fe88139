#!/usr/bin/env python3
"""The planner end to end on 2 ranks (GPUs): --calibrate with --sweep plan=auto,layer,2 writes a calibration beside
the summary (one strategy per --plan-syncs entry, an all-reduce and a sharded one, sizes ascending, the whole gradient
last, the sharded one's step per layer) and predicted_ms on every overlap row, the auto plan's no worse than the fixed
plans' predictions; the calibration read back with --calibration predicts the same plan; another --batch is refused
(exit 2, one line naming batch) before any work; and phase4_predict turns it into a what-if CSV. Exit 77 without GPUs.

  planner_test.py PHASE4 PHASE4_PREDICT MPIEXEC [MPIEXEC_FLAGS...]
"""
import json
import pathlib
import subprocess
import sys
import tempfile

import pandas as pd

MODEL = ["--hidden", "512", "--layers", "6", "--batch", "256", "--iters", "5", "--warmup", "2"]


def main():
    phase4, predict, mpirun = sys.argv[1], sys.argv[2], sys.argv[3:]
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        csv = work / "p4.csv"

        def run(*args, ranks=2):
            command = [*mpirun[:1], "-np", str(ranks), *mpirun[1:], phase4, *MODEL, *map(str, args)]
            result = subprocess.run(command, capture_output=True, text=True, timeout=600)
            print(" ".join(command[-12:]), "->", result.returncode)
            print(result.stdout[-2000:] + result.stderr[-2000:])
            return result

        first = run("--calibrate", "--plan-syncs", "nccl,sharded", "--sweep", "plan=auto,layer,2", "--check",
                    "--csv", csv)
        if first.returncode == 77:
            return 77
        assert first.returncode == 0, first.returncode
        calibration = json.loads((work / "p4.calibration.json").read_text())
        assert [s["sync"] for s in calibration["strategies"]] == ["nccl", "sharded"]
        sharded = calibration["strategies"][1]["sharded"]
        assert all(len(sharded[k]) == 6 for k in ("layer_ms", "update_ms", "gather_ms", "step_ms")), sharded
        assert all(ms > 0 for ms in sharded["gather_ms"]) and sharded["iteration_ms"] > 0, sharded
        gradient = 4 * 512 * 512 * 6
        for strategy in calibration["strategies"]:
            assert strategy["bytes"] == sorted(strategy["bytes"]) and strategy["bytes"][-1] == gradient, strategy
            assert all(ms > 0 for ms in strategy["comm_ms"]) and all(r > 0 for r in strategy["stretch"])
        assert calibration["ranks"] == 2 and len(calibration["compute"]["step_ms"]) == 6
        summary = pd.read_csv(csv)
        overlap = summary[summary["mode"] == "overlap"].reset_index(drop=True)
        assert list(overlap["plan"]) == ["auto", "caps", "caps"], list(overlap["plan"])
        assert (overlap["predicted_ms"] > 0).all(), overlap["predicted_ms"]
        assert overlap.loc[0, "predicted_ms"] <= overlap["predicted_ms"].min() + 1e-9, "auto predicted above a cap"
        meta = json.loads((work / "p4.meta.json").read_text())
        assert meta["calibration"] == str(work / "p4.calibration.json")

        again = run("--calibration", work / "p4.calibration.json", "--plan", "auto", "--plan-syncs", "nccl,sharded",
                    "--csv", work / "again.csv")
        assert again.returncode == 0
        row = pd.read_csv(work / "again.csv").set_index("mode").loc["overlap"]
        assert row["buckets"] == overlap.loc[0, "buckets"]
        assert abs(row["predicted_ms"] - overlap.loc[0, "predicted_ms"]) < 1e-6

        other = [a if a != "256" else "128" for a in MODEL]
        command = [*mpirun[:1], "-np", "2", *mpirun[1:], phase4, *other, "--calibration", work / "p4.calibration.json",
                   "--csv", work / "other.csv"]
        refused = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=300)
        assert refused.returncode == 2, refused.returncode
        assert "batch is 128 here but 256 in the calibration" in refused.stderr, refused.stderr
        assert not (work / "other.csv").exists()

        what_if = subprocess.run([predict, "--calibration", work / "p4.calibration.json", "--ranks", "2,16,64",
                                  "--csv", work / "what-if.csv"], capture_output=True, text=True, timeout=120)
        assert what_if.returncode == 0, what_if.stderr
        table = pd.read_csv(work / "what-if.csv")
        assert len(table) == 6 and set(table["link"]) == {"ib400", "eth100"}
        print(f"PASS: auto {overlap.loc[0, 'predicted_ms']:.3f} ms predicted, {overlap.loc[0, 'time_ms_p50']:.3f} "
              f"measured; calibration reused; another batch refused; what-if of {len(table)} points")
        return 0


if __name__ == "__main__":
    sys.exit(main())
