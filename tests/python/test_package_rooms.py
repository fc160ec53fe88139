"""The Python package in rooms (issue 73): overlap_bench/ holds subpackages that follow its families and one user-
facing room, the probe (its API, state, wrapper rows, tuner and ob-probe-suite); no module imports another that imports
it back, function-local imports included; the rooms themselves point one way (core below all); reading a CSV imports
no plotting library."""
import ast
import subprocess
import sys

from conftest import REPO

PACKAGE = REPO / "overlap_bench"
ROOMS = {"core", "planner", "report", "ddp", "trace", "compare", "markdown", "probe"}
# What each room may import besides itself: the rooms below it.
BELOW = {"core": set(), "planner": {"core"}, "report": {"core", "planner"}, "ddp": {"core"},
         "trace": {"core", "report", "ddp"}, "compare": {"core", "report", "planner"},
         "markdown": {"core", "report", "compare"}, "probe": {"core", "ddp", "trace"}, "top": set()}


def module_name(path, package=PACKAGE):
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package=PACKAGE):
    """{module: modules of the package it imports}, every import statement of its file (function-local ones too)."""
    files = {module_name(p, package): p for p in package.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package.name):
                found |= {f"{node.module}.{a.name}" for a in node.names} | {node.module}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        graph[name] = {m for m in found if m in files and m != name and m.count(".") > 0}
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def room(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ROOMS else "top"


def test_the_package_is_rooms_and_the_probe():
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} == ROOMS
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py"]
    assert all((PACKAGE / r / "__init__.py").read_text().startswith('"""') for r in ROOMS)


def test_no_module_imports_one_that_imports_it_back():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_sees_a_function_local_cycle(tmp_path):
    package = tmp_path / "overlap_bench"
    (package / "core").mkdir(parents=True)
    (package / "core" / "a.py").write_text("from overlap_bench.core import b\n")
    (package / "core" / "b.py").write_text("def f():\n    from overlap_bench.core import a\n")
    assert cycles(import_graph(package)) == [["overlap_bench.core.a", "overlap_bench.core.b"]]


def test_the_rooms_point_one_way():
    upward = sorted(f"{m} -> {d}" for m, deps in import_graph().items() for d in deps
                    if room(d) != room(m) and room(d) not in BELOW[room(m)])
    assert upward == []


def test_reading_a_csv_imports_no_plotting_library():
    code = "import sys; from overlap_bench.core import ob_csv, packs; print('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "False", result.stderr
