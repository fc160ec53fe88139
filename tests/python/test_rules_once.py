"""One rule in one place (issue 85): phase 4's strategy lists are declared once, in experiments/headline.toml (read
through overlap_bench/core/experiment_lists.py), and every list of them there names strategies the C++ registry
registers (phase4_chunked_nccl/sync/); no module of the package and no script types a list of strategy names by hand
(a Python list, tuple, set or dict keys, or a comma-separated string, holding two names or more; a shell line holding
two names or more); the figures' colours follow the list's order."""
import ast
import re

from conftest import REPO
from overlap_bench.core import experiment_lists

SYNC = REPO / "phase4_chunked_nccl" / "sync"
EXPERIMENT = REPO / "experiments" / "headline.toml"  # the checkout's (the tests import the pip-installed package)


def registered():
    """The strategies the registry holds, read from its rows: each row's name, and its carried twin (`carrying`)."""
    names, carried = set(), set()
    for path in SYNC.glob("*.cpp"):
        text = path.read_text()
        found = set(re.findall(r'\brow(?:\.name = |\()"([a-z][a-z0-9-]*)"', text))
        names |= found
        if "carrying(" in text:
            carried |= {f"{n}-carry" for n in found}
    return names | carried


NAMES = registered()


def typed_lists_in_python(text):
    """(line, names) for each display or comma-separated string of a Python source naming two strategies or more."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            named = {i.value for i in items if isinstance(i, ast.Constant) and i.value in NAMES}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = {p.strip() for p in node.value.split(",")} & NAMES
        else:
            continue
        if len(named) >= 2:
            found.append((node.lineno, sorted(named)))
    return found


def typed_lists_in_shell(text):
    """(line, names) for each code line of a shell script naming two strategies or more (comments aside)."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        code = re.sub(r"(^|\s)#.*", "", line)
        named = set(re.split(r"[\s,\"'()=]+", code)) & NAMES
        if len(named) >= 2:
            found.append((number, sorted(named)))
    return found


def test_the_registry_is_read():
    assert {"nccl", "nccl-sym", "ce", "sharded", "sharded-ce", "nccl-carry"} <= NAMES, NAMES


def test_the_declared_lists_name_registered_strategies():
    for key in ("strategies", "planned_syncs"):
        listed = experiment_lists.headline_list(key, EXPERIMENT)
        assert listed and set(listed) <= NAMES and len(set(listed)) == len(listed), (key, listed, NAMES)


def test_no_strategy_list_is_typed_outside_the_registry_and_the_experiments():
    typed = []
    for path in sorted((REPO / "overlap_bench").rglob("*.py")):
        typed += [f"{path.relative_to(REPO)}:{n}: {names}" for n, names in typed_lists_in_python(path.read_text())]
    for path in sorted(p for p in (REPO / "scripts").rglob("*") if p.is_file() and p.suffix in {".sh", ".sbatch"}):
        typed += [f"{path.relative_to(REPO)}:{n}: {names}" for n, names in typed_lists_in_shell(path.read_text())]
    assert typed == [], "strategy lists typed by hand (read experiment_lists.headline_list instead):\n" + \
        "\n".join(typed)


def test_the_check_finds_a_typed_list():
    """The checks are live: each way of typing a list is found, one name alone is not."""
    assert len(typed_lists_in_python('A = {"nccl": "#1", "ce": "#2"}\nB = ["sharded", "nccl-carry"]\n'
                                     'C = ("nccl", "x")\nD = "nccl,nccl-sym,ce"\nE = "nccl"\n')) == 3
    assert len(typed_lists_in_shell('syncs=(--plan-syncs "nccl,ce")\n# nccl, ce in a comment\n--sync nccl\n')) == 1


def test_the_figures_colour_strategies_by_the_lists_order():
    colours = experiment_lists.strategy_colours(EXPERIMENT)
    listed = experiment_lists.headline_list("strategies", EXPERIMENT)
    assert list(colours) == listed and list(colours.values()) == experiment_lists.PALETTE[:len(listed)]
    source = (REPO / "overlap_bench" / "report" / "plot_interference.py").read_text()
    assert "experiment_lists.strategy_colours()" in source and not re.search(r'"#[0-9a-f]{6}"', source)


def test_the_multicast_off_launch_is_said_once():
    """The mpirun line with NVLink multicast kept off, and its variables, live in overlap_bench/core/mpi_launch.py
    alone: the package's tools take MPIRUN, bench_gpu.sh exports MULTICAST_OFF from it (the Slurm batch files, a
    site's own, are left to the site)."""
    from overlap_bench.core import mpi_launch

    assert mpi_launch.MPIRUN.split()[:3] == ["mpirun", "--bind-to", "none"]
    assert all(f"-x {name}" in mpi_launch.MPIRUN for name in mpi_launch.MULTICAST_OFF)
    variables = re.compile("|".join(mpi_launch.MULTICAST_OFF))
    said = []
    for path in sorted((REPO / "overlap_bench").rglob("*.py")) + sorted((REPO / "scripts").glob("**/*.sh")):
        if path.name == "mpi_launch.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = re.sub(r"(^|\s)#.*", "", line)
            if variables.search(code) or re.search(r"\bmpirun --bind-to none -x\b", code):
                said.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert said == [], "the multicast-off launch said again (take overlap_bench.core.mpi_launch):\n" + "\n".join(said)
