"""Phase 4 as a house of parts (issue 33): the rooms, the sizes a reader can hold in mind, the strategy seam's width,
mains that read like their phase's description, and the step loop that knows schedules, not strategies."""
import re
import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "support"))
import cxx_shape  # noqa: E402

PHASE4 = REPO / "phase4_chunked_nccl"
ROOMS = ["model", "sync", "schedule", "planner", "driver"]
SOURCES = sorted(p for p in PHASE4.rglob("*") if p.suffix in {".cpp", ".cu", ".hpp", ".cuh"})
MAINS = [REPO / f"{phase}/main.cpp" for phase in
         ["phase1_cuda_baseline", "phase2_omp_overlap", "phase3_mpi_cuda", "phase4_chunked_nccl"]]
MAINS += [PHASE4 / "planner" / "predict_main.cpp", PHASE4 / "model" / "model_main.cpp"]


def test_phase4_stands_in_its_rooms():
    for room in ROOMS:
        assert any((PHASE4 / room).glob("*.c*")), room
    loose = [p.name for p in PHASE4.iterdir() if p.is_file() and p.suffix in {".cpp", ".cu", ".hpp", ".cuh"}]
    assert loose == ["main.cpp"], loose


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PHASE4)))
def test_no_phase4_file_above_350_lines_and_no_function_above_80(path):
    assert len(path.read_text().splitlines()) <= 350
    long = [(name, last - first + 1) for name, first, last in cxx_shape.functions(path) if last - first + 1 > 80]
    assert not long, long


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


def test_the_step_loop_knows_schedules_not_strategies():
    for name in ["schedule/trainer.cu", "schedule/schedule.cu", "schedule/all_reduce.cu"]:
        text = cxx_shape.strip((PHASE4 / name).read_text())  # code, not comments
        assert "gathers" not in text and "sharded()" not in text and "gather(" not in text, name
    # Each schedule's bound lives with it: none in common/.
    assert "sharded" not in (REPO / "common" / "metrics.hpp").read_text().lower()


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
