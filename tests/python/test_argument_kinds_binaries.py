"""Issue 83, "paths and commands checked once", the binaries (test_argument_kinds.py has the Python tools): every
built binary refuses each kind of bad argument its declaration names, before any work: exit 2, one line on stderr
naming the option, no file written, in well under a few seconds. The cases come from each binary's CLI11 --help: its
options' types (INT and FLOAT ranges, {choices}, INPUT_FILE, OUTPUT_FILE and LIST, common/path_options.hpp; "..."
for a repeatable option): a number that is none and one out of its range, a value not among the choices, a missing
input and a folder, an output that is a link and one in a folder that is a file, a list or repeatable option with a
value twice, and an unknown option. An option declared alike in several binaries (common/'s, the same --help type)
has every bad value tried in the first and one in each other. An MPI binary runs alone, as one rank (it refuses
before MPI_Init)."""
import os
import pathlib
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from argument_cases import UNKNOWN, fixtures, problems, snapshot
from conftest import REPO


# The binaries: their options from CLI11's --help.
# The one that starts fastest first (no CUDA library to load): an option declared alike in several binaries (common/'s
# --iters, --csv, ...: the same name and --help type) has every bad value tried there, and its first one in the others.
BINARIES = ["phase2_omp_overlap/phase2_omp_overlap", "common/ob_trace", "phase1_cuda_baseline/phase1_cuda_baseline",
            "phase3_mpi_cuda/phase3_mpi_cuda", "phase4_chunked_nccl/phase4_chunked_nccl",
            "phase4_chunked_nccl/phase4_predict", "phase4_chunked_nccl/phase4_model"]
# What a required option needs to be given for a case to reach the bad one (a value of its declared kind, or, for
# phase4_model's --model, a preset).
REQUIRED_VALUES = {"--model": "gpt2"}
OPTION = re.compile(r"^  (?P<names>-[^\s{]+|[a-z_]+)(?:\{[a-z]+\})? (?P<type>(?:INT|UINT|FLOAT|TEXT|INPUT_FILE|"
                    r"OUTPUT_FILE|LIST)\b[^ ]*|\{[^ ]*)(?P<range> in \[[^\]]*\])?(?P<default>=\S*)?(?P<many> \.\.\.)?"
                    r"(?P<required> REQUIRED)?")
FLAG = re.compile(r"^  (?P<names>-[^\s{]+)(?:\{[a-z]+\})?(?:\s|$)")


def binary_options(help_text):
    """Each option of a CLI11 --help: its name, type, range, default, whether it repeats or is required; flags too."""
    options = []
    for line in help_text.splitlines():
        match = OPTION.match(line)
        if match:
            names = match["names"].split(",")
            base = re.match(r"[A-Z_]+|\{", match["type"]).group()
            low = high = None
            if match["range"]:
                low, high = (float(x) for x in re.split(r" - |, ", match["range"].strip()[4:-1]))
            choices = re.search(r"\{([^}]*)\}", match["type"])
            options.append({"name": names[-1], "base": base, "type": match["type"], "low": low, "high": high,
                            "default": (match["default"] or "=")[1:], "many": bool(match["many"]),
                            "required": bool(match["required"]),
                            "choices": re.split(r"[,|]", choices.group(1)) if choices else None})
        elif FLAG.match(line) and not line.strip().startswith("-h,"):
            options.append({"name": FLAG.match(line)["names"].split(",")[-1], "base": "FLAG"})
    return options


def binary_valid(option):
    if option["name"] in REQUIRED_VALUES:
        return REQUIRED_VALUES[option["name"]]
    return {"INPUT_FILE": "given.txt", "OUTPUT_FILE": "out.csv"}.get(option["base"], option["default"] or "1")


def binary_bad(option):
    """(what, value) pairs `option` must refuse: a number that is none and one out of its range; a choice not among
    them; a missing input or a folder; an output that is a link or lies in a file; a list with an item twice."""
    base, low, high = option["base"], option["low"], option["high"]
    if option["choices"]:
        return [("not a choice", "no-such-choice")]
    if base in ("INT", "UINT"):
        out = f"{int(low) - 1}" if low is not None and low > 0 else f"{int(high) + 1}" if high is not None else "-1"
        return [("not a number", "x"), ("out of range", out)] if base == "UINT" or low is not None else [
            ("not a number", "x")]
    if base == "FLOAT":
        out = [("out of range", f"{low - 1:g}" if low > 0 else f"{high * 2 + 1:g}")] if low is not None else []
        return [("not a number", "nan"), *out]
    if base == "INPUT_FILE":
        return [("missing", "missing.txt"), ("folder", "given_dir")]
    if base == "OUTPUT_FILE":
        return [("symlink", "link.csv"), ("in a file", "afile/out.csv")]
    if base == "LIST":
        item = (option["default"] or "x").split(",")[0]
        return [("repeats", f"{item},{item}")]
    return []


def binary_cases(binary, options, tried):
    """Each bad value of each option (of one already `tried` alike in another binary, its first), and an unknown
    option; `tried` gains this binary's options."""
    required = [o for o in options if o.get("required")]

    def argv(replaced=None, values=()):
        line = []
        for option in required:
            if replaced is not None and option["name"] == replaced["name"]:
                continue
            line += ([option["name"]] if option["name"].startswith("-") else []) + [binary_valid(option)]
        if replaced is not None:
            for value in values:
                line += ([replaced["name"]] if replaced["name"].startswith("-") else []) + [value]
        return line

    cases = [("unknown option", [UNKNOWN, *argv()], UNKNOWN)]
    for option in options:
        if option["base"] == "FLAG":
            continue
        declared = (option["name"], option["type"], option["low"], option["high"])
        for what, value in binary_bad(option)[:1 if declared in tried else None]:
            cases.append((f"{option['name']} {what}", argv(option, [value]), option["name"]))
        tried.add(declared)
        if option["many"] and option["base"] in ("INPUT_FILE", "OUTPUT_FILE", "LIST"):
            value = binary_valid(option)
            cases.append((f"{option['name']} repeats", argv(option, [value, value]), option["name"]))
    return cases


def run_case(binary, folder, line):
    started = time.monotonic()
    try:
        done = subprocess.run([str(binary), *line], capture_output=True, text=True, cwd=folder, timeout=60,
                              env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                                       OMPI_MCA_plm_rsh_agent=""))
        return {"rc": done.returncode, "stderr": done.stderr, "seconds": time.monotonic() - started}
    except subprocess.TimeoutExpired:
        return {"rc": "timeout", "stderr": "", "seconds": time.monotonic() - started}


@pytest.fixture(scope="module")
def binary_runs(tmp_path_factory):
    """Every built binary's cases, started at once in the background (four at a time; each is a process start and a
    refusal) while the Python tools' run: {binary: (cases, folders, futures)}, or a skip reason."""
    build = pathlib.Path(os.environ.get("OB_BUILD_DIR", REPO / "build" / "default"))
    pool = ThreadPoolExecutor(max_workers=4)
    runs, tried = {}, set()
    for relative in BINARIES:
        binary = build / relative
        if not os.access(binary, os.X_OK):
            runs[relative] = f"{relative} is not built in {build}"
            continue
        shown = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60)
        options = binary_options(shown.stdout) if shown.returncode == 0 else []
        cases = binary_cases(binary, options, tried)
        root = tmp_path_factory.mktemp(binary.name)
        folders = []
        for number in range(len(cases)):
            folder = fixtures(root / str(number))
            os.symlink("target.txt", folder / "link.csv")
            folders.append((folder, snapshot(folder)))
        futures = [pool.submit(run_case, binary, folder, line) for (_, line, _), (folder, _) in zip(cases, folders)]
        runs[relative] = (shown, options, cases, folders, futures)
    yield runs
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("relative", BINARIES)
def test_binary_refuses_each_bad_argument_before_any_work(binary_runs, relative):
    run = binary_runs[relative]
    if isinstance(run, str):
        pytest.skip(run)
    shown, options, cases, folders, futures = run
    assert shown.returncode == 0, shown.stderr
    assert options, f"{relative} --help: no option read"
    found = [problems({"id": f"{relative}: {what}", "argv": line, "cwd": str(folder), "named": named},
                      future.result(), before)
             for (what, line, named), (folder, before), future in zip(cases, folders, futures)]
    found = [p for p in found if p]
    assert found == [], "\n".join(found)


def test_every_built_binary_declares_its_paths(tmp_path):
    """A path option is declared as one (INPUT_FILE, OUTPUT_FILE), so its cases follow from --help: none of these
    binaries' path options is plain TEXT."""
    build = pathlib.Path(os.environ.get("OB_BUILD_DIR", REPO / "build" / "default"))
    paths = {"--csv", "--timeline", "--calibration", "--layers-csv", "--shape-json", "--power", "-o", "--output",
             "timeline"}
    plain = []
    for relative in BINARIES:
        binary = build / relative
        if not os.access(binary, os.X_OK):
            continue
        shown = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60).stdout
        plain += [f"{relative} {o['name']}" for o in binary_options(shown)
                  if o["name"] in paths and o["base"] not in ("INPUT_FILE", "OUTPUT_FILE", "FLAG")]
    assert plain == []


# ob_trace_columns is not a CLI11 program (its usage line: TRACE OUT | --parse-only TRACE): its arguments' kinds are
# this table.
TRACE_COLUMNS = "trace_reader/ob_trace_columns"
TRACE_COLUMNS_CASES = [("unknown option", [UNKNOWN, "given.txt", "out.csv"], UNKNOWN),
                       ("TRACE missing", ["missing.txt", "out.csv"], "missing.txt"),
                       ("TRACE folder", ["given_dir", "out.csv"], "given_dir"),
                       ("OUT symlink", ["given.txt", "link.csv"], "link.csv"),
                       ("OUT in a file", ["given.txt", "afile/out.csv"], "afile/out.csv")]


@pytest.mark.parametrize("what,line,named", TRACE_COLUMNS_CASES, ids=[c[0] for c in TRACE_COLUMNS_CASES])
def test_trace_columns_refuses_each_bad_argument(what, line, named, tmp_path):
    build = pathlib.Path(os.environ.get("OB_BUILD_DIR", REPO / "build" / "default"))
    binary = build / TRACE_COLUMNS
    if not os.access(binary, os.X_OK):
        pytest.skip(f"{TRACE_COLUMNS} is not built in {build}")
    folder = fixtures(tmp_path / "case")
    os.symlink("target.txt", folder / "link.csv")
    before = snapshot(folder)
    found = problems({"id": what, "argv": line, "cwd": str(folder), "named": named}, run_case(binary, folder, line),
                     before)
    assert found is None, found
