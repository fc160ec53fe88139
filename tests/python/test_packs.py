"""A published folder's unnamed files packed into one (overlap_bench/core/packs.py): the Markdown's files stay loose,
the suite's readers take a packed file where its loose one is asked for, packing is reproducible and undone exactly."""
import json
import shutil
import subprocess

import pandas as pd

from conftest import REPO, tool
from overlap_bench.markdown import md_generate
from overlap_bench.core import ob_csv
from overlap_bench.core import packs

GOLDEN = REPO / "tests" / "data" / "golden" / "p3.csv"
META = {"suite": "overlap-bench", "commit": "abc1234", "date_utc": "2026-11-28T00:00:00Z", "config_columns": ["batch"],
        "gpus": [{"gpu_name": "NVIDIA H200"}], "command_line": ["phase3_mpi_cuda", "--check"]}


def published(tmp_path):
    """A repository with one results folder: a page naming two of its files (a link, a generated block's source)."""
    folder = tmp_path / "results" / "2xH200" / "run"
    (folder / "runs").mkdir(parents=True)
    shutil.copy(GOLDEN, folder / "linked.csv")
    shutil.copy(GOLDEN, folder / "source.csv")
    shutil.copy(GOLDEN, folder / "p3.csv")
    (folder / "p3.meta.json").write_text(json.dumps(META))
    (folder / "p3.log").write_text("phase3: done\n")
    (folder / "figure.png").write_bytes(b"\x89PNG not really")
    (folder / "runs" / "r0-p4.csv.gz").write_bytes(b"\x1f\x8b gzipped bytes")
    (folder / "README.md").write_text("[the data](linked.csv)\n<!-- generated: table source.csv columns=mode -->\n"
                                      "<!-- /generated -->\n")
    return folder


def test_only_files_no_markdown_names_are_packed_and_readers_find_them(tmp_path):
    folder = published(tmp_path)
    (tmp_path / "results" / "runs").mkdir()  # ad-hoc runs (git-ignored) are left alone
    (tmp_path / "results" / "runs" / "phase3.csv").write_text("mode\n")
    assert packs.pack(tmp_path / "results", repo=tmp_path) == 2  # the folder and its runs/
    assert (tmp_path / "results" / "runs" / "phase3.csv").is_file()
    loose = sorted(p.name for p in folder.iterdir() if p.is_file())
    assert loose == ["README.md", "figure.png", "linked.csv", packs.PACK, "source.csv"]
    assert [p.name for p in (folder / "runs").iterdir()] == [packs.PACK]
    # read where the loose files were: bytes, CSV, the summary's metadata sidecar, the summary itself
    assert packs.exists(folder / "p3.log") and packs.read_text(folder / "p3.log") == "phase3: done\n"
    assert not packs.exists(folder / "nothing.csv")
    assert ob_csv.read_metadata(folder / "p3.csv")["commit"] == "abc1234"
    assert ob_csv.load_summary(folder / "p3.csv").attrs["config_columns"] == ["batch"]
    pd.testing.assert_frame_equal(packs.read_csv(folder / "p3.csv"), pd.read_csv(GOLDEN))
    assert packs.rglob(tmp_path / "results", "*.meta.json") == [folder / "p3.meta.json"]
    assert packs.read_bytes(folder / "runs" / "r0-p4.csv.gz") == b"\x1f\x8b gzipped bytes"
    assert ob_csv.kind_of(folder / "p3.csv") == "summary" and ob_csv.kind_of(folder / "p3.log") is None
    assert packs.glob(folder, "p3*") == [folder / "p3.csv", folder / "p3.log", folder / "p3.meta.json"]
    said = subprocess.run([*tool("verdict"), folder], capture_output=True, text=True)  # a folder's packed summaries
    assert said.returncode == 0 and "\np3: " in said.stdout, said.stderr
    # the index of published folders reads packed metadata
    assert "[2xH200/run](2xH200/run) | 1 | 1 x NVIDIA H200 | abc1234 | 2026-11-28" in md_generate.index_block(
        tmp_path / "results", [], {})


def test_packing_is_reproducible_and_unpacking_gives_the_files_back(tmp_path):
    folder = published(tmp_path)
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    packs.pack(tmp_path / "results", repo=tmp_path)
    first = (folder / packs.PACK).read_bytes()
    assert packs.unpack(tmp_path / "results") == 2
    assert {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    packs.pack(tmp_path / "results", repo=tmp_path)
    assert (folder / packs.PACK).read_bytes() == first  # no time, owner or order of the machine in it
    (folder / "later.log").write_text("another run\n")  # a later file joins the folder's pack
    packs.pack(tmp_path / "results", repo=tmp_path)
    assert packs.read_text(folder / "later.log") == "another run\n" and packs.exists(folder / "p3.log")


def test_a_root_that_is_not_a_folder_is_refused(tmp_path):
    result = subprocess.run([*tool("packs"), "pack", tmp_path / "none"], capture_output=True, text=True)
    assert result.returncode == 2 and "not a directory" in result.stderr and "Traceback" not in result.stderr
