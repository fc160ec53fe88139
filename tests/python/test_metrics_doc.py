"""METRICS.md documents every column the binaries write (summary and timeline CSVs, metadata keys)."""
import json
import re

import pandas as pd

from overlap_bench.core import packs

from conftest import REPO, run

QUICK = ["--iters", "2", "--warmup", "0", "--chunks", "3"]


def documented_names():
    text = (REPO / "METRICS.md").read_text()
    return set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", text))


def test_every_phase2_column_is_documented(phase2, tmp_path):
    names = documented_names()
    for workload in ("synthetic", "real"):
        csv = tmp_path / f"{workload}.csv"
        result = run(phase2, *QUICK, "--compute-ms", "1", "--comm-ms", "1", "--workload", workload,
                     "--chunk-rows", "4", "--hidden", "16", "--csv", csv)
        assert result.returncode == 0, result.stderr
        summary = pd.read_csv(csv)
        assert not summary.empty
        missing = [c for c in summary.columns if c not in names]
        assert not missing, f"columns missing from METRICS.md: {missing}"
        timeline = pd.read_csv(tmp_path / f"{workload}.timeline.csv")
        assert [c for c in timeline.columns if c not in names] == []
        meta = json.loads((tmp_path / f"{workload}.meta.json").read_text())
        assert [k for k in meta if k not in names] == []


def test_every_published_column_is_documented():
    """Every column and metadata key in results/<N>x<GPU>/ is defined in METRICS.md."""
    names = documented_names()
    published = [p for p in packs.rglob(REPO / "results", "*.csv") if "runs" not in p.parts]  # packed ones too
    for path in published:
        missing = [c for c in packs.read_csv(path, nrows=1).columns if c not in names]
        assert not missing, f"{path.name}: columns missing from METRICS.md: {missing}"
    for path in packs.rglob(REPO / "results", "*.meta.json"):
        missing = [k for k in json.loads(packs.read_text(path)) if k not in names]
        assert not missing, f"{path.name}: keys missing from METRICS.md: {missing}"
