"""bench_targets: ob-analyze-bench's tables held against issue 82's targets, each figure from the tables (met where
it is at most its bound), the other tools' ratios only where they ran."""
import pandas as pd

from overlap_bench.trace import bench_targets


def test_targets_from_the_tables(tmp_path):
    common = {"events": 1, "steps": 1, "seconds": 1.0, "cpus": 2, "mb_per_cpu_s": 1.0, "reader": "native",
              "parse_only_s": 1.0, "tracelens_status": "not installed"}
    pd.DataFrame([{**common, "trace_bytes": 250e6, "cpu_s": 2.0, "reader_cpu_s": 1.0, "max_rss_mb": 200.0,
                   "reader_over_parse": 1.0, "analyze_over_parse": 2.0, "hta_status": "ran", "hta_cpu_s": 200.0,
                   "hta_max_rss_mb": 1600.0},
                  {**common, "trace_bytes": 1e9, "cpu_s": 5.0, "reader_cpu_s": 3.0, "max_rss_mb": 300.0,
                   "reader_over_parse": 3.5, "analyze_over_parse": 6.0, "gzip_over_zlib": 1.5,
                   "gzip_reader_over_zlib": 1.2, "hta_status": "not run"}]).to_csv(tmp_path / "bench.csv", index=False)
    pd.DataFrame([{"ranks": 8, "seconds": 25.0, "cores": 2, "cpu_s": 30.0}]).to_csv(tmp_path / "bench.ranks.csv",
                                                                                  index=False)
    frame = bench_targets.targets(tmp_path).set_index("target")
    assert frame.loc["1 GB one rank: CPU s on one core", "met"] == "no"
    assert frame.loc["1 GB one rank: CPU s on one core", "measured_over_bound"] == 1.25
    assert frame.loc["gzip: ob-analyze's CPU over zlib's inflate", "met"] == "yes"
    assert frame.loc["peak memory at 4 GB, MB", "met"] == "-"  # no 4 GB table
    assert frame.loc["8 ranks x 1 GB: wall s on 2 cores", "met"] == "no"
    least = frame.loc["8 ranks x 1 GB: CPU s over 2 cores (the least wall free cores allow)"]
    assert (least["measured"], least["met"]) == (15.0, "-")  # a figure beside the target, not the target
    assert frame.loc["hta at 250 MB: its CPU over ob-analyze's (higher: ob-analyze faster)", "measured"] == 100.0
    assert not any("hta at 1 GB" in t or "tracelens" in t for t in frame.index)


def test_the_other_tools_rows_taken_from_an_earlier_bench(tmp_path):
    """--others-from: HTA's and TraceLens's columns taken from an earlier bench.csv's row of the same bytes (not run
    again, their ratios to this run's ob-analyze); a table without that trace's row refused before ob-analyze runs."""
    import subprocess
    import sys

    bench = [sys.executable, "-m", "overlap_bench.trace.analyze_bench", "--gb", "0.002"]
    first = subprocess.run([*bench, "--csv", tmp_path / "a.csv"], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    earlier = pd.read_csv(tmp_path / "a.csv")
    earlier["hta_status"], earlier["hta_cpu_s"], earlier["hta_max_rss_mb"] = "ran", 50.0, 900.0
    earlier.to_csv(tmp_path / "a.csv", index=False)
    again = subprocess.run([*bench, "--others-from", tmp_path / "a.csv", "--csv", tmp_path / "b.csv"],
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    row = pd.read_csv(tmp_path / "b.csv").iloc[0]
    assert (row["hta_status"], row["hta_cpu_s"], row["hta_max_rss_mb"]) == ("ran", 50.0, 900.0)
    assert row["hta_over_analyze_cpu"] == 50.0 / row["cpu_s"]
    assert row["tracelens_status"] == earlier.iloc[0]["tracelens_status"]
    other = subprocess.run([sys.executable, "-m", "overlap_bench.trace.analyze_bench", "--gb", "0.003", "--others-from",
                            tmp_path / "a.csv", "--csv", tmp_path / "c.csv"], capture_output=True, text=True)
    assert other.returncode == 2 and "--others-from" in other.stderr and not (tmp_path / "c.csv").exists()
