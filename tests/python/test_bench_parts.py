"""bench_gpu.sh's steps as data: the experiment specs under experiments/bench/ checked key by key, expanded into the
commands bench_gpu.sh runs, and the resolved experiment a run writes beside its results."""
import hashlib
import json
import subprocess
import sys

import pytest

from conftest import REPO

from overlap_bench.compare import bench_parts
from overlap_bench.core import ob_tool

BENCH = REPO / "experiments" / "bench"


def parts_in(tmp_path, steps, part="demo"):
    """A folder of one part whose steps are the TOML text `steps`, and its index."""
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / f"{part}.toml").write_text(f'part = "{part}"\nsummary = "a demo"\n{steps}')
    (tmp_path / "bench.toml").write_text(f'parts = ["{part}"]\n')
    return folder


def run(*args):
    return subprocess.run([sys.executable, "-m", "overlap_bench.compare.bench_parts", *map(str, args)],
                          capture_output=True,
                          text=True, timeout=60, cwd=REPO)


def test_every_published_part_loads_and_is_listed_once():
    parts = bench_parts.load_parts(BENCH)
    assert list(parts)[:3] == ["test", "phase1", "phase3"] and len(parts) == len(list(BENCH.glob("*.toml"))) == 24
    assert all(spec["summary"] and spec["step"] for spec in parts.values())


def test_a_step_becomes_its_command_line():
    """ranks: mpirun with the multicast variables, env exported to the ranks; a module through torchrun; a prefix."""
    step = {"name": "s", "ranks": "{gpus}", "binary": "p4", "env": {"NCCL_DEBUG": "INFO"}, "args": "--check"}
    assert bench_parts.command_of(step) == "{mpi} -x NCCL_DEBUG=INFO -np {gpus} {p4} --check"
    torchrun = {"name": "d", "ranks": "4", "launcher": "torchrun", "module": "overlap_bench.ddp.bench_ddp",
                "args": "-x"}
    assert bench_parts.command_of(torchrun) == ("python3 -m torch.distributed.run --nproc_per_node 4 -m "
                                                "overlap_bench.ddp.bench_ddp -x")
    wrapped = {"name": "w", "prefix": "ncu --nvtx", "binary": "p1", "env": {"A": "1"}}
    assert bench_parts.command_of(wrapped) == "ncu --nvtx env A=1 {p1}"


def test_the_matrix_expands_first_key_outermost_and_configurations_give_h_l_b(tmp_path):
    folder = parts_in(tmp_path, '[[step]]\nname = "p-{h}-{x}"\nmatrix = { c = "@configs", x = ["a", "b"] }\n'
                                'binary = "p4"\nargs = "--hidden {h} --layers {l} --batch {b} --csv {out}/{x}.csv"\n')
    result = run("--parts", folder, "--config", "8,2,4", "--config", "16,1,2", "--out", "/o", "--build", "/b")
    assert result.returncode == 0, result.stderr
    lines = [line.split("\t") for line in result.stdout.splitlines()]
    assert [name for name, _ in lines] == ["p-8-a", "p-8-b", "p-16-a", "p-16-b"]
    assert lines[1][1] == "/b/phase4_chunked_nccl/phase4_chunked_nccl --hidden 8 --layers 2 --batch 4 --csv /o/b.csv"


def test_conditions_choose_the_steps_that_run_here(tmp_path):
    folder = parts_in(tmp_path, '[[step]]\nname = "big"\nmin_gpus = 3\ncommand = "true"\n'
                                '[[step]]\nname = "with"\nrequires = ["sh"]\ncommand = "true"\n'
                                '[[step]]\nname = "without"\nabsent = ["sh"]\ncommand = "true"\n')
    assert [line.split("\t")[0] for line in run("--parts", folder, "--gpus", 2).stdout.splitlines()] == ["with"]
    assert run("--parts", folder, "--gpus", 4).stdout.startswith("big\t")


@pytest.mark.parametrize("steps, words", [
    ('[[step]]\nname = "a"\nbinary = "p4"\nranks = "2"\nrank = "2"\n', "unknown key 'rank'"),
    ('[[step]]\nname = "a"\nbinary = "p4"\nmodule = "m"\n', "exactly one of 'binary', 'module' and 'command'"),
    ('[[step]]\nname = "a"\nbinary = "p9"\n', "'binary' must be one of p1, p3, p4"),
    ('[[step]]\nname = "a"\ncommand = "x"\nranks = "2"\n', "a 'command' stands alone"),
    ('[[step]]\nname = "a"\nbinary = "p4"\nranks = 2\n', "'ranks' must be a str"),
    ('[[step]]\nname = "a"\nbinary = "p4"\nmatrix = { x = [1, 2] }\n', "matrix 'x' must be"),
    ('[[step]]\nname = "a"\nbinary = "p4"\nargs = "--csv {outdir}/x.csv"\n', "no value for '{outdir}'"),
    ('[[step]]\nname = "a"\nmodule = "m"\nlauncher = "srun"\nranks = "2"\n', "'launcher' is 'torchrun'"),
    ('[[step]\n', "cannot be read"),
])
def test_a_spec_that_cannot_run_is_refused_before_anything_runs(tmp_path, steps, words):
    folder = parts_in(tmp_path, steps)
    result = run("--parts", folder, "--resolved", tmp_path / "out" / "experiment.json")
    assert result.returncode == 2 and words in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_the_index_lists_each_part_once(tmp_path):
    folder = parts_in(tmp_path, '[[step]]\nname = "a"\ncommand = "true"\n')
    (folder / "other.toml").write_text('part = "other"\nsummary = "x"\n[[step]]\nname = "b"\ncommand = "true"\n')
    with pytest.raises(ob_tool.UsageError, match="must list each of"):
        bench_parts.load_parts(folder)
    (folder / "other.toml").write_text('part = "wrong"\nsummary = "x"\n[[step]]\nname = "b"\ncommand = "true"\n')
    (tmp_path / "bench.toml").write_text('parts = ["demo", "other"]\n')
    with pytest.raises(ob_tool.UsageError, match="'part' must be its file's name"):
        bench_parts.load_parts(folder)


def test_a_run_writes_its_resolved_experiment(tmp_path):
    """Every command as it runs, the parts' files with their digests and specs, the machine's values."""
    resolved = tmp_path / "out" / "experiment.json"
    result = run("--part", "phase3", "--part", "headline", "--gpus", 4, "--out", tmp_path / "out", "--resolved",
                 resolved)
    assert result.returncode == 0, result.stderr
    written = json.loads(resolved.read_text())
    printed = [line.split("\t") for line in result.stdout.splitlines()]
    assert [[s["name"], s["command"]] for s in written["steps"]] == printed
    assert [p["part"] for p in written["parts"]] == ["phase3", "headline"] and written["values"]["gpus"] == "4"
    phase3 = written["parts"][0]
    assert phase3["file"] == "experiments/bench/phase3.toml"
    assert phase3["sha256"] == hashlib.sha256((BENCH / "phase3.toml").read_bytes()).hexdigest()
    assert written["commit"] and written["kind"] == "overlap-bench-experiment"
    assert "OMPI_MCA_coll_libnbc_iallreduce_algorithm=1 -np 2" in written["steps"][1]["command"]
