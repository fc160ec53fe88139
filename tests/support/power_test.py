#!/usr/bin/env python3
"""phase4_chunked_nccl --power end to end on one GPU: with NVML, a power CSV (rank, gpu, t_us, power_w) whose
samples come about every 20 ms, energy per iteration and mean power in the summary's compute, seq and overlap
rows, each plausible for a GPU (and none for a comm-only run too short to measure); without NVML, the line 'power:
unavailable' and no power CSV. Exit 77 without a GPU.

  power_test.py BINARY
"""
import pathlib
import subprocess
import sys
import tempfile

import pandas as pd


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        csv = pathlib.Path(work) / "p4.csv"
        command = [binary, "--power", "--check", "--hidden", "4096", "--layers", "8", "--batch", "2048", "--iters",
                   "300", "--csv", str(csv)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=600)
        print(result.stdout[-3000:] + result.stderr[-3000:])
        if result.returncode == 77:
            return 77
        assert result.returncode == 0, f"exit {result.returncode}"
        power_csv = pathlib.Path(work) / "p4.power.csv"
        if "power: unavailable" in result.stderr:
            assert not power_csv.exists()
            print("PASS: power unavailable, said so, no power CSV")
            return 0
        samples = pd.read_csv(power_csv)
        assert list(samples.columns) == ["rank", "gpu", "t_us", "power_w"]
        gaps = samples["t_us"].diff().dropna() / 1000.0
        assert len(samples) >= 10, len(samples)
        assert 15 <= gaps.median() <= 40, f"median gap {gaps.median()} ms"
        assert samples["power_w"].between(20, 1500).all(), samples["power_w"].describe()
        summary = pd.read_csv(csv).set_index("mode")
        for mode in ("seq", "overlap", "compute"):  # 1 rank: comm moves nothing and lasts too short to measure
            energy, watts = summary.loc[mode, "energy_j_per_iter"], summary.loc[mode, "power_w_avg"]
            assert energy > 0 and 20 <= watts <= 1500, (mode, energy, watts)
        assert pd.isna(summary.loc["comm", "energy_j_per_iter"])
        print(f"PASS: {len(samples)} samples, median gap {gaps.median():.1f} ms; energy per iteration: "
              + ", ".join(f"{m} {summary.loc[m, 'energy_j_per_iter']:.3g} J" for m in ("seq", "overlap")))
        return 0


if __name__ == "__main__":
    sys.exit(main())
