"""The house of parts (issues 33 and 50): phase 4's rooms, the sizes a reader can hold in mind in the whole tree
(tests, scripts and results included), the strategy seam's width, mains that read like their phase's description,
and the step loop that knows schedules, not strategies."""
import ast
import json
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "support"))
import cxx_shape  # noqa: E402

PHASE4 = REPO / "phase4_chunked_nccl"
# Phase 4's rooms from the bottom up: a room includes its own and those below it, never one above (DESIGN.md,
# "Phase 4 in rooms"); tools/ (phase4_predict, phase4_model) take any room but the driver's.
ROOMS = ["core", "model", "sync", "schedule", "planner", "driver"]
CXX = {".cpp", ".cu", ".hpp", ".cuh"}
SOURCES = sorted(p for p in PHASE4.rglob("*") if p.suffix in CXX)
# Every source of the tree a person maintains: C++/CUDA, Python and shell, wherever it lives (not the build
# folders, not the ad-hoc runs under results/runs).
TREE = sorted(p for p in REPO.rglob("*") if p.suffix in CXX | {".py", ".sh"} and p.is_file()
              and not {"build", ".git", "runs"} & set(p.relative_to(REPO).parts[:-1])
              and not p.relative_to(REPO).parts[0].startswith("."))
MAINS = sorted(p for p in TREE if p.suffix in CXX and re.search(r"^int main\(", p.read_text(), re.M))


def test_phase4_stands_in_its_rooms():
    for room in ROOMS:
        assert any((PHASE4 / room).glob("*.c*")), room
    loose = [p.name for p in PHASE4.iterdir() if p.is_file() and p.suffix in {".cpp", ".cu", ".hpp", ".cuh"}]
    assert loose == ["main.cpp"], loose


def room_includes(path):
    return re.findall(r'#include "phase4_chunked_nccl/(\w+)/', path.read_text())


def test_phase4_s_rooms_only_point_down():
    upward = []
    for path in SOURCES:
        room = path.relative_to(PHASE4).parts[0]
        allowed = ROOMS[:ROOMS.index(room) + 1] if room in ROOMS else ROOMS[:-1] + ["tools"]
        if room == "main.cpp":
            allowed = ROOMS
        upward += [f"{path.relative_to(PHASE4)} includes {r}/" for r in room_includes(path) if r not in allowed]
    assert upward == []
    # core/ is plain C++ for every build: no CUDA, NCCL or MPI; no room but the driver's names Config.
    for path in (PHASE4 / "core").iterdir():
        assert not re.search(r"#include <(cuda|cublas|nccl|mpi)", path.read_text()), path.name
    for room in ["core", "model", "sync", "schedule", "planner", "tools"]:
        for path in (PHASE4 / room).iterdir():
            assert not re.search(r"\bConfig\b", cxx_shape.strip(path.read_text())), path


def test_the_structure_test_sees_an_upward_include(tmp_path):
    probe = tmp_path / "probe.hpp"
    probe.write_text('#include "phase4_chunked_nccl/driver/config.hpp"\n#include "phase4_chunked_nccl/core/spec.hpp"\n')
    assert room_includes(probe) == ["driver", "core"]


def room_links(cmake_text):
    """{room: [rooms its library links]} from phase 4's CMakeLists (phase4_room(ROOM BELOW ...)), and every other
    library or link a phase4_*_room target takes there, as (target, what) pairs."""
    text = re.sub(r"#.*", "", cmake_text)
    rooms = {m.group(1): re.findall(r"\w+", m.group(2).split("CUDA_ONLY")[0])
             for m in re.finditer(r"^phase4_room\((\w+)((?:\s+BELOW[^)]*)?[^)]*)\)", text, re.M)}
    rooms = {room: [r for r in below if r != "BELOW"] for room, below in rooms.items()}
    others = re.findall(r"target_link_libraries\((phase4_\w+_room)\s+\w+\s+([^)]*)\)", text)
    return rooms, [o for o in others if "${" not in o[0]]


def test_phase4_s_rooms_are_one_library_each_linked_only_down():
    """One CMake library a room, linking only the rooms below it; the tools take no driver; the binary the driver."""
    text = (PHASE4 / "CMakeLists.txt").read_text()
    rooms, others = room_links(text)
    assert list(rooms) == ROOMS and others == []
    upward = [f"{room} links {b}" for room, below in rooms.items() for b in below
              if ROOMS.index(b) >= ROOMS.index(room)]
    assert upward == []
    assert len(re.findall(r"^\s*add_library\(", re.sub(r"#.*", "", text), re.M)) == 1  # phase4_room's own
    tools = re.findall(r"target_link_libraries\(phase4_(?:predict|model) PRIVATE ([^)]*)\)", text)
    assert len(tools) == 2 and not any("driver" in t for t in tools)
    assert "target_link_libraries(phase4_chunked_nccl PRIVATE phase4_driver_room)" in text


def test_the_structure_test_sees_an_upward_link():
    rooms, _ = room_links("phase4_room(core)\nphase4_room(sync BELOW driver CUDA_ONLY a.cpp)\n")
    assert rooms == {"core": [], "sync": ["driver"]}


def test_a_schedule_and_a_model_family_are_one_file_that_registers_itself():
    """No enum, switch or list names them: each file of schedule/ that defines a schedule registers it, and each
    .cpp of model/ is a model family's row (registered, its model made by its factory); the test build adds one of
    each (tests/phase4/test_rooms_gpu.cpp, and a family with a layout of its own in test_model_families.cpp)."""
    for path in (PHASE4 / "schedule").glob("*.c*"):
        text = cxx_shape.strip(path.read_text())
        for name in re.findall(r"class (\w+) (?:final )?: public Schedule\b", text):
            assert re.search(rf"RegisterSchedule \w+\([^;]*\b{name}\b", text) or "made_schedule<" + name in text, \
                (path.name, name)
    families = sorted(PHASE4.glob("model/*.cpp"))
    assert [p.name for p in families] == ["mlp.cpp", "transformer.cpp"]
    for path in families:
        text = cxx_shape.strip(path.read_text())
        assert "RegisterFamily" in text and "made_model<" in text, path.name
    for path in SOURCES:
        assert "ScheduleKind" not in path.read_text(), path.name
    test = (REPO / "tests" / "phase4" / "test_rooms_gpu.cpp").read_text()
    assert all(door in test for door in ["RegisterSchedule", "RegisterFamily", "RegisterSync"])
    assert "RegisterFamily" in (REPO / "tests" / "phase4" / "test_model_families.cpp").read_text()


def test_no_model_family_is_named_outside_its_own_file():
    """Issue 73: the options, the driver, the calibration and the planner ask the family's row (core/families.hpp),
    never compare its name; only the default's name is written once, where the rows are declared."""
    families = set(PHASE4.glob("model/*.cpp"))
    named = re.compile(r'transformer\(\)|"transformer"|[!=]= "mlp"|kMlpFamily|kTransformerFamily|family ==|'
                       r"== kDefaultFamily|use_model\(")
    for path in SOURCES:
        if path in families:
            continue
        found = named.search(code_with_strings(path))
        assert not found, f"{path.relative_to(PHASE4)}: {found.group()}"


def python_functions(path):
    """(name, first line, last line) of every function and method of a Python file."""
    return [(node.name, node.lineno, node.end_lineno) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


@pytest.mark.parametrize("path", TREE, ids=lambda p: str(p.relative_to(REPO)))
def test_no_file_above_350_lines_and_no_function_above_80(path):
    assert len(path.read_text().splitlines()) <= 350
    shape = python_functions if path.suffix == ".py" else cxx_shape.functions if path.suffix in CXX else None
    long = [(name, last - first + 1) for name, first, last in (shape(path) if shape else [])
            if last - first + 1 > 80]
    assert not long, long


def test_the_tree_s_size_rules_see_every_part_of_it():
    """The walk finds every phase's main, the tests, the scripts and the results' code; a long Python function is
    counted whole (decorators and nested definitions included in its span)."""
    names = {str(p.relative_to(REPO)) for p in TREE}
    assert {"overlap_bench/ddp/bench_ddp.py", "tests/phase4/test_phase4_gpu.cpp", "common/tools/trace_main.cpp",
            "scripts/test.sh", "tests/python/test_structure.py"} <= names
    assert len(MAINS) >= 8 and REPO / "phase2_omp_overlap" / "main.cpp" in MAINS
    assert not any("build" in p.relative_to(REPO).parts for p in TREE)


def test_the_python_function_counter_spans_whole_bodies(tmp_path):
    source = tmp_path / "x.py"
    source.write_text("def f():\n    def g():\n        return 1\n\n    return g\n\n\nclass C:\n    def m(self):\n"
                      "        pass\n")
    assert sorted(python_functions(source)) == [("f", 1, 5), ("g", 2, 3), ("m", 9, 10)]


@pytest.mark.parametrize("path", MAINS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_main_is_at_most_60_lines(path):
    mains = [(first, last) for name, first, last in cxx_shape.functions(path) if name == "main"]
    assert len(mains) == 1 and mains[0][1] - mains[0][0] + 1 <= 60, mains


def test_the_function_counter_sees_through_comments_strings_and_classes(tmp_path):
    source = tmp_path / "x.cpp"
    source.write_text('namespace a {\nclass C {\n void m() {\n  if (x) { "}"; }\n }\n};\n// f() {\n'
                      'int f(int y) {\n  return [&] { return y; }();\n}\n}  // namespace a\n')
    assert cxx_shape.functions(source) == [("m", 3, 5), ("f", 8, 10)]


def class_body(text, name):
    start = text.index(f"class {name} ")
    depth, end = 0, start
    for end in range(text.index("{", start), len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            break
    return text[start:end]


def test_the_strategy_seam_has_at_most_8_virtual_methods():
    text = (PHASE4 / "sync" / "gradient_sync.hpp").read_text()
    virtuals = [v for v in re.findall(r"virtual\s+[^;{]*?(\~?\w+)\s*\(", class_body(text, "GradientSync"))
                if not v.startswith("~")]
    assert 1 <= len(virtuals) <= 8, virtuals


def code_with_strings(path):
    """A source's code with its string literals, its comments left out."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def test_a_schedule_is_one_file_and_nothing_else_names_it_or_its_parts():
    """Issue 73: each schedule is one file under schedule/ (*.cpp, its class and its row: parts, bound, the planner's
    model); the step's machinery (schedule/*.cu), the driver, the calibration, the planner and the tools name no
    schedule, no schedule's part and no strategy (they ask the rows); the shared timing structs hold no schedule's
    fields."""
    rows = sorted(PHASE4.glob("schedule/*.cpp"))
    assert [p.name for p in rows] == ["all_reduce.cpp", "carry.cpp", "sharded.cpp"]
    assert all("RegisterSchedule" in p.read_text() for p in rows)
    named = re.compile(r'"(sharded|all-reduce|gather|sharded-ce|nccl-sym|[a-z-]+-carry)"|[!=]= "(nccl|ce)"|gather_ms|'
                       r"gather_begin|layer_update_ms|kShardedSchedule|kCarrySchedule|\.sharded\b|sharded\(\)|"
                       r"ShardedCalibration")
    for path in SOURCES:
        if path in rows or path.parent.name == "sync":
            continue
        found = named.search(code_with_strings(path))
        assert not found, f"{path.relative_to(PHASE4)}: {found.group()}"
    # Each schedule's bound lives with it: none in common/.
    assert "sharded" not in (REPO / "common" / "metrics.hpp").read_text().lower()


def test_a_schedules_knobs_are_named_only_in_its_own_file():
    """Issue 85: a schedule's own options are knobs of its row (core/knobs.hpp), named as a constant in its file
    (`constexpr const char* kX = "name";  // its knob`); the driver, the calibration, the planner, the specs and the
    tools carry them by name (KnobValues) and never name one: no member, option, column or key of that name. The
    summary's declared knob columns (schema.json) are those knobs."""
    rows = sorted(PHASE4.glob("schedule/*.cpp"))
    constant = re.compile(r'constexpr const char\* k\w+ = "([a-z-]+)";  // its knob')
    knobs = [k for p in rows for k in constant.findall(p.read_text())]
    assert sorted(knobs) == ["carry", "prefetch"], knobs
    declared = json.loads((REPO / "overlap_bench" / "core" / "schema.json").read_text())["summary"]["knobs"]
    assert sorted(declared) == sorted(k.replace("-", "_") for k in knobs)
    for knob in knobs:
        named = re.compile(rf'\.{re.escape(knob)}\b|"(--)?{re.escape(knob)}"|\b{re.escape(knob)} = ')
        for path in SOURCES:
            if path in rows or path.parent.name == "sync":  # the strategies' rows name the schedules
                continue
            found = named.search(code_with_strings(path))
            assert not found, f"{path.relative_to(PHASE4)}: {found.group()}"


def test_a_strategy_is_one_file_that_registers_itself():
    for path in (PHASE4 / "sync").glob("*.cpp"):
        if path.name == "registry.cpp":
            continue
        assert "RegisterSync" in path.read_text(), path.name
    # Nothing outside sync/ names a strategy's factory or compares a strategy's name.
    factories = r"make_(plain|symmetric|copy_engine|sharded|sharded_copy_engine)\("
    for path in SOURCES:
        if path.parent.name != "sync":
            text = cxx_shape.strip(path.read_text())
            assert not re.search(factories, text) and 'sync == ""' not in text, path.name


def test_strategies_enqueue_their_collectives_through_one_door():
    """The compute-only step silences a strategy's collectives (sync/collectives.hpp); a strategy that called NCCL's
    collectives itself would keep communicating in it, and the compute row would no longer be the same work."""
    collectives = r"\bnccl(AllReduce|ReduceScatter|AllGather|AlltoAll|Broadcast|Reduce|Send|Recv|GroupStart|GroupEnd)\("
    for path in (PHASE4 / "sync").glob("*.*"):
        if path.name == "collectives.hpp":
            continue
        assert not re.search(collectives, cxx_shape.strip(path.read_text())), path.name
    door = cxx_shape.strip((PHASE4 / "sync" / "collectives.hpp").read_text())
    calls = re.findall(collectives, door)
    guarded = re.findall(r"if \(!silent_\) NCCL_CHECK\(nccl\w+\(", door)
    assert len(calls) == len(guarded) >= 6, (calls, guarded)


def ruff(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_the_python_passes_ruff(tmp_path):
    """pyproject.toml's ruff configuration over overlap_bench/ and tests/ (scripts/test.sh installs ruff as root); and
    the configuration is live: an unused import and an undefined name in a file of the tree are found."""
    pytest.importorskip("ruff")
    result = ruff("overlap_bench", "tests")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]
    bad = tmp_path / "overlap_bench" / "bad.py"
    bad.parent.mkdir()
    bad.write_text("import os\n\n\ndef f():\n    return undefined_name\n")
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    found = ruff("overlap_bench", cwd=tmp_path)
    assert found.returncode == 1 and "F401" in found.stdout and "F821" in found.stdout, found.stdout


CLANG_FORMAT = shutil.which("clang-format-14")


@pytest.mark.skipif(CLANG_FORMAT is None, reason="needs clang-format-14 (scripts/test.sh installs it as root)")
def test_the_cxx_is_laid_out_by_clang_format(tmp_path):
    """.clang-format (Google's style at 120 columns, short bodies kept on one line) over every C++ and CUDA file of
    the tree; pinned to version 14, whose layout the tree holds (other versions lay some lines out otherwise). The
    check is live: a badly laid out file is found."""
    sources = [p for p in TREE if p.suffix in CXX]
    result = subprocess.run([CLANG_FORMAT, "--dry-run", "--Werror", "--style=file", *map(str, sources)], cwd=REPO,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    bad = tmp_path / "bad.cpp"
    bad.write_text("int  f( int x ){return x;}\n")
    (tmp_path / ".clang-format").write_text((REPO / ".clang-format").read_text())
    found = subprocess.run([CLANG_FORMAT, "--dry-run", "--Werror", "--style=file", str(bad)], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    assert found.returncode != 0 and "bad.cpp" in found.stderr
