"""The README is a guide and the published numbers come from data (issues 32 and 34): every generated block of
README.md and the results READMEs is what its CSVs and logs give today; README.md stays within 200 lines; the
tracked results stay within 15 MB; every relative link in the Markdown resolves."""
import re
import subprocess

import pytest

from conftest import REPO, tool
from overlap_bench.core import packs

MARKDOWN = [REPO / "README.md", REPO / "METRICS.md", REPO / "DESIGN.md", *sorted((REPO / "docs").glob("*.md")),
            *sorted(p for p in (REPO / "results").rglob("*.md")
                    if "runs" not in p.relative_to(REPO / "results").parts[:1])]


def test_generated_blocks_match_their_data():
    with_blocks = [p for p in MARKDOWN if "<!-- generated:" in p.read_text()]
    assert REPO / "README.md" in with_blocks and REPO / "results" / "README.md" in with_blocks
    result = subprocess.run([*tool("md_generate.py"), "--check",
                             *map(str, with_blocks)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_block_that_drifted_from_its_data_is_found(tmp_path):
    csv = tmp_path / "s.csv"
    csv.write_text("system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max\n"
                   "overlap-bench,phase2,seq,1,4,5,10.5,11,10,12\n")
    page = tmp_path / "page.md"
    page.write_text("<!-- generated: summary s.csv columns=time_ms_p50 -->\n| mode | time_ms_p50 |\n|---|---|\n"
                    "| seq | 9.9 |\n<!-- /generated -->\n")
    script = [*tool("md_generate.py")]
    checked = subprocess.run([*script, "--check", str(page)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 1 and "differs from its data" in checked.stdout
    assert "| seq | 9.9 |" in page.read_text()  # --check writes nothing
    assert subprocess.run([*script, str(page)], capture_output=True, timeout=60).returncode == 0
    assert "| seq | 10.5 |" in page.read_text()
    assert subprocess.run([*script, "--check", str(page)], capture_output=True, timeout=60).returncode == 0


def test_a_table_block_is_any_csv_and_names_a_missing_column(tmp_path):
    (tmp_path / "t.csv").write_text("sync,ratio\nnccl,1.25\n")
    page = tmp_path / "page.md"
    page.write_text("<!-- generated: table t.csv columns=sync,ratio -->\n<!-- /generated -->\n")
    script = [*tool("md_generate.py")]
    assert subprocess.run([*script, str(page)], capture_output=True, timeout=60).returncode == 0
    assert "| nccl | 1.25 |" in page.read_text()
    page.write_text("<!-- generated: table t.csv columns=speed -->\n<!-- /generated -->\n")
    result = subprocess.run([*script, str(page)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "no column speed" in result.stderr, result.stderr


def test_a_modes_block_sets_one_runs_modes_side_by_side(tmp_path):
    header = ("system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max,hidden,layers,"
              "batch,overlap_pct\n")
    for batch, seq, overlap in [(512, 10.5, 9.25), (2048, 17.5, 15.0)]:
        (tmp_path / f"p4-{batch}.csv").write_text(
            header + f"overlap-bench,phase4,seq,2,0,5,{seq},1,1,1,4096,16,{batch},\n"
            f"overlap-bench,phase4,overlap,2,0,5,{overlap},1,1,1,4096,16,{batch},42.5\n")
    page = tmp_path / "page.md"
    page.write_text("<!-- generated: modes p4-*.csv modes=seq,overlap columns=overlap_pct -->\n<!-- /generated -->\n")
    script = [*tool("md_generate.py")]
    assert subprocess.run([*script, str(page)], capture_output=True, timeout=60).returncode == 0
    text = page.read_text()
    assert "| configuration | seq_ms | overlap_ms | overlap_pct |" in text
    assert "| 4096,16,2048 | 17.5 | 15 | 42.5 |" in text and "| 4096,16,512 | 10.5 | 9.25 | 42.5 |" in text


def test_a_modes_block_gives_a_sweep_one_row_per_point_named_by_its_columns(tmp_path):
    header = ("system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max,hidden,layers,"
              "batch,sync,bucket_mb\n")
    (tmp_path / "sweep.csv").write_text(header + "".join(
        f"overlap-bench,phase4,{mode},2,0,5,{ms},1,1,1,4096,16,512,ce,{mb}\n"
        for mb, seq, overlap in [(25, 10.5, 7.0), (64, 9.5, 6.25)]
        for mode, ms in [("seq", seq), ("overlap", overlap)]))
    page = tmp_path / "page.md"
    script = [*tool("md_generate.py")]
    page.write_text("<!-- generated: modes sweep.csv by=sync,bucket_mb modes=seq,overlap -->\n<!-- /generated -->\n")
    assert subprocess.run([*script, str(page)], capture_output=True, timeout=60).returncode == 0
    text = page.read_text()
    assert "| configuration | sync | bucket_mb | seq_ms | overlap_ms |" in text
    assert "| 4096,16,512 | ce | 25 | 10.5 | 7 |" in text and "| 4096,16,512 | ce | 64 | 9.5 | 6.25 |" in text
    page.write_text("<!-- generated: modes sweep.csv modes=seq,overlap -->\n<!-- /generated -->\n")  # points mixed
    result = subprocess.run([*script, str(page)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "a mode appears twice" in result.stderr, result.stderr


def test_a_pivot_block_lays_rows_out_by_a_column_and_names_a_missing_one(tmp_path):
    (tmp_path / "map.csv").write_text("mode,sync,msg_mb,compute_slowdown,comm_stretch\n"
                                      "interference,nccl,4,0.5,2.25\ninterference,nccl,1,1.68,4.12\n"
                                      "interference,ce,1,1.04,3.45\nseq,ce,1,9.0,9.0\n")
    page = tmp_path / "page.md"
    script = [*tool("md_generate.py")]
    page.write_text("<!-- generated: pivot map.csv rows=sync columns=msg_mb values=compute_slowdown,comm_stretch "
                    "where=mode:interference -->\n<!-- /generated -->\n")
    assert subprocess.run([*script, str(page)], capture_output=True, timeout=60).returncode == 0
    text = page.read_text()
    assert "| sync | msg_mb 1 | msg_mb 4 |" in text  # sizes in numeric order
    assert "| nccl | 1.68 / 4.12 | 0.5 / 2.25 |" in text and "| ce | 1.04 / 3.45 |  |" in text and "9 / 9" not in text
    page.write_text("<!-- generated: pivot map.csv rows=strategy columns=msg_mb values=compute_slowdown -->\n"
                    "<!-- /generated -->\n")
    result = subprocess.run([*script, str(page)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "no column strategy" in result.stderr, result.stderr


def test_readme_is_a_guide_of_at_most_150_lines():
    assert len((REPO / "README.md").read_text().splitlines()) <= 150


@pytest.mark.skipif(not (REPO / ".git").exists(), reason="needs a checkout")
def test_tracked_results_stay_within_5_mb_in_at_most_30_folders():
    """results/ holds the current published set (results/README.md): at most 30 published folders
    (results/<machine>/<topic>), within 5 MB, on disk too, each file rounded up to a 4 KB block, for every folder's
    files that no Markdown names are packed into one (overlap_bench/core/packs.py); earlier publications are history."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "results"], capture_output=True, check=True)
    files = [REPO / name for name in listed.stdout.decode().split("\0") if name]
    size = sum(path.stat().st_size for path in files if path.is_file())
    assert size <= 5 * 1000 * 1000, f"tracked results/ holds {size / 1e6:.1f} MB"
    folders = {path.relative_to(REPO / "results").parts[:2] for path in files}
    published = sorted("/".join(f) for f in folders if len(f) == 2 and (REPO / "results" / f[0] / f[1]).is_dir())
    assert len(published) <= 30, published
    on_disk = sum(-(-path.stat().st_size // 4096) * 4096 for path in files if path.is_file())
    assert on_disk <= 5 * 1000 * 1000, f"tracked results/ takes {on_disk / 1e6:.1f} MB on disk"
    named = packs.named_by_markdown(REPO)
    unpacked = [f for f in files if f.suffix not in {".md", ".png"} and f.name != packs.PACK
                and f.resolve() not in named]
    assert not unpacked, f"files no Markdown names, not packed (python3 -m overlap_bench.core.packs pack results): " \
                         f"{unpacked[:3]}"
    later = [f for f in files if f.parent.name == "runs" and f.name.startswith(("r1-", "r2-", "r3-", "r4-"))
             and f.name.endswith(".meta.json")]
    assert not later, later[:3]


def test_results_hold_no_code():
    """results/ holds data, specs and generated READMEs (issue 50): no script and no executable file; and no device
    call's script is kept in the tree (issue 73: the experiment spec and the metadata, every command as it ran, are
    the record)."""
    code = [p for p in (REPO / "results").rglob("*") if p.is_file() and "runs" not in p.relative_to(REPO).parts
            and (p.suffix in {".py", ".sh"} or p.stat().st_mode & 0o111)]
    assert not code, code[:5]
    assert not (REPO / "experiments" / "transcripts").exists()


DOCS = {"DESIGN": REPO / "DESIGN.md", "METRICS": REPO / "METRICS.md", "USAGE": REPO / "docs" / "USAGE.md"}


def doc_places(path):
    """What a citation may name in a document: its headings, its bold run-in titles (**Sharded steps**) and the
    first cells of its tables (`bound`), lower case, whitespace folded."""
    text = path.read_text()
    places = [line.lstrip("#") for line in text.splitlines() if line.startswith("#")]
    places += re.findall(r"\*\*([^*]+)\*\*", text)
    places += re.findall(r"(?m)^\| `?([^|`]+)`? \|", text)
    return [" ".join(p.split()).lower() for p in places]


def test_every_cited_section_exists():
    """A citation (METRICS.md, "The planner") in code, scripts, tests or docs names a place of that document, so a
    reader who follows it lands somewhere."""
    places = {name: doc_places(path) for name, path in DOCS.items()}
    cite = re.compile(r'(DESIGN|METRICS|USAGE)\.md[,:]?\s+"([^"]+)"')
    missing, checked = [], 0
    for path in REPO.rglob("*"):
        parts = path.relative_to(REPO).parts
        if path.suffix not in {".md", ".py", ".cpp", ".hpp", ".cu", ".cuh", ".sh"} or not path.is_file() or \
                {"build", ".git", "runs"} & set(parts[:-1]) or parts[0].startswith("."):
            continue
        for doc, section in cite.findall(path.read_text(errors="replace")):
            section = " ".join(section.replace("//", " ").split()).lower()
            if section.startswith("<<"):  # a C++ stream, not a citation
                continue
            checked += 1
            if not any(place.startswith(section) for place in places[doc]):
                missing.append(f"{path.relative_to(REPO)}: {doc}.md, {section!r}")
    assert checked > 50 and not missing, missing


def test_every_relative_link_resolves():
    broken = []
    for page in MARKDOWN:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (page.parent / target.split("#")[0]).exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert not broken, "\n".join(broken)


# A path a page names in backticks or as results/...: a file or folder of the checkout (the page's own folder's, or
# from the root); placeholders (<hw>, N, ...), globs, ad-hoc outputs and files a run writes are not paths of it.
NAMED_PATH = re.compile(r"`((?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+/?)`"
                        r"|(?<![\w/.-])(results/[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]*[A-Za-z0-9_])")
ROOMS = [REPO / "phase4_chunked_nccl", REPO / "common", *(REPO / "overlap_bench").glob("*/")]  # within its room
WRITTEN = ("results/runs", "build/", "ob-probe", "/tmp", "traces/", "out/", "analysis/", "OUT", "DIR", "FOLDER")


def test_every_path_a_page_names_exists():
    """Issue 73: the docs describe the tree as it is: every path they name (in backticks, or a results/ path in
    prose) exists, except what a run writes and placeholders."""
    missing = []
    for page in MARKDOWN:
        for groups in NAMED_PATH.findall(re.sub(r"```.*?```", "", page.read_text(), flags=re.S)):
            path = (groups[0] or groups[1]).rstrip("/.")
            if any(c in path for c in "<>*{}$") or path.startswith(WRITTEN) or re.search(r"(^|/)[A-Z]+(/|$)", path):
                continue
            bases = [REPO, page.parent, REPO / "results", *ROOMS]
            if not any((base / path).exists() or packs.exists(base / path) for base in bases):
                missing.append(f"{page.relative_to(REPO)}: {path}")
    assert not missing, "\n".join(missing)


# The binaries whose every option the reference (docs/USAGE.md) names, and options of the tools the docs show
# beside ours (mpirun, Slurm, CMake, CTest, pip), which no --help of ours lists.
BINARIES = ["phase1_cuda_baseline/phase1_cuda_baseline", "phase2_omp_overlap/phase2_omp_overlap",
            "phase3_mpi_cuda/phase3_mpi_cuda", "phase4_chunked_nccl/phase4_chunked_nccl",
            "phase4_chunked_nccl/phase4_predict", "phase4_chunked_nccl/phase4_model"]
OTHER_TOOLS = {"--allow-run-as-root", "--bind-to", "--oversubscribe", "--account", "--partition", "--nodes",
               "--ntasks", "--ntasks-per-node", "--cpus-per-task", "--gpus-per-task", "--gpu-bind", "--mpi", "--build",
               "--install", "--prefix", "--preset", "--test-dir", "--nproc", "--x", "--test-only", "--trace", "--nvtx"}
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def helps(build_dir):
    from conftest import built
    texts = {}
    for relative in BINARIES:
        binary = built(build_dir, relative)
        texts[binary.name] = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60).stdout
    return texts


def test_every_option_the_docs_name_exists_and_every_option_is_in_the_reference(build_dir):
    texts = helps(build_dir)
    ours = set().union(*(set(OPTION.findall(text)) for text in texts.values()))
    scripts = "".join(p.read_text() for folder in ("scripts", "overlap_bench", "examples")
                      for p in (REPO / folder).rglob("*") if p.suffix in {".py", ".sh", ".sbatch"})
    scripts += (REPO / "common" / "tools" / "trace_main.cpp").read_text()
    docs = (REPO / "README.md").read_text() + (REPO / "docs" / "USAGE.md").read_text()
    taken = ours | OTHER_TOOLS  # and the scripts' own: an argparse name or a case label in their source
    unknown = sorted(o for o in set(OPTION.findall(docs)) - taken
                     if not any(f"{before}{o}{after}" in scripts
                                for before, after in [('"', ""), ("", ")"), ("", "|"), ("|", "")]))
    assert not unknown, f"the docs name options nothing takes: {unknown}"
    reference = set(OPTION.findall((REPO / "docs" / "USAGE.md").read_text()))
    for name, text in texts.items():
        missing = sorted(set(OPTION.findall(text)) - {"--help", "--version"} - reference)
        assert not missing, f"{name} takes options docs/USAGE.md does not name: {missing}"


def test_the_sweep_names_in_the_reference_are_the_binarys(build_dir):
    help_text = " ".join(helps(build_dir)["phase4_chunked_nccl"].split())
    names = re.search(r"NAME one of ([a-z, -]+?) \(", help_text).group(1).split(", ")
    sentence = re.search(r"`--sweep NAME=V1,V2,\.\.\.` takes (.*?)\(below\)", (REPO / "docs" / "USAGE.md").read_text(),
                         re.S).group(1)
    assert sorted(re.findall(r"`([a-z-]+)`", sentence)) == sorted(names)


# Tables typed by hand in the results READMEs of rounds 1 and 2, per file: their number may only fall, as their rows
# move into generated blocks (issue 32); a README written since has none.
HAND_TYPED_TABLE_ROWS = {
    "results/2xH200/phase3-osu/README.md": 1,  # a file's description naming OSU's version (7.4), no measurement
}


def hand_typed_table_rows(text):
    """Table rows holding a decimal number outside every generated block."""
    plain = re.sub(r"<!-- generated:.*?<!-- /generated -->", "", text, flags=re.S)
    return [line for line in plain.splitlines() if line.startswith("|") and re.search(r"\d\.\d", line)]


def test_no_new_table_of_numbers_is_typed_by_hand():
    page = "| a | 1.5 |\n<!-- generated: x -->\n| b | 2.5 |\n<!-- /generated -->\n"
    assert hand_typed_table_rows(page) == ["| a | 1.5 |"]
    for path in sorted((REPO / "results").rglob("README.md")):
        name = str(path.relative_to(REPO))
        rows = hand_typed_table_rows(path.read_text())
        assert len(rows) <= HAND_TYPED_TABLE_ROWS.get(name, 0), (name, rows[:3])


def test_the_console_commands_the_docs_name_are_the_packages():
    """Every `ob-*` command README.md and docs/USAGE.md name is one pyproject.toml installs, and each it installs is
    named in docs/USAGE.md."""
    installed = set(re.findall(r"^(ob-[a-z-]+) = ", (REPO / "pyproject.toml").read_text(), re.M))
    usage = (REPO / "docs" / "USAGE.md").read_text()
    named = set(re.findall(r"`(ob-[a-z-]+)`", (REPO / "README.md").read_text() + usage))
    in_usage = set(re.findall(r"`(ob-[a-z-]+)`", usage))
    assert named <= installed, f"named but not installed: {sorted(named - installed)}"
    assert installed <= in_usage, f"installed but not in docs/USAGE.md: {sorted(installed - in_usage)}"
