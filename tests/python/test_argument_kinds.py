"""Issue 83, "paths and commands checked once", the Python tools (test_argument_kinds_binaries.py has the binaries):
every console command (pyproject.toml's [project.scripts]) declares each argument's kind through
overlap_bench/core/arguments.py, and refuses each kind of bad argument its declaration names, before any work: exit
2, one line on stderr naming the argument, no file written, in well under a few seconds. The cases are derived from
the declarations (each tool's parser as it declares it, read through arguments.declared), never listed by hand:

  every command    an unknown option
  input_file       a file that does not exist; a folder             input_folder  a folder that does not exist; a file
  input_path       a path that does not exist                       executable    no such program; a folder
  output_file      an existing symbolic link; a path in a folder that is a file
  output_folder    a symbolic link; a file; a folder whose parent is a file
  number / whole   not a number; NaN; below its least; above its most; (whole) a fraction
  choices          a value not among them                           listed        a value twice
  a list (nargs "+" or "*", action "append"), unless repeatable     the same value given twice

The tools run in one worker process (argument_worker.py) that imports every module once and forks a child per
command, which runs its cases one after another: a case's time is the tool's own checking, not Python's start."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from argument_cases import UNKNOWN, fixtures, problems, snapshot
from conftest import REPO

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

WORKER = pathlib.Path(__file__).with_name("argument_worker.py")
COMMANDS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]


@pytest.fixture(scope="module")
def worker():
    """The worker process (argument_worker.py), its modules imported once: ask(request) -> its answer."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    process = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, env=env, cwd=REPO)

    def ask(request):
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        line = process.stdout.readline()
        assert line, f"the worker ended (exit {process.poll()})"
        return json.loads(line)

    yield ask
    process.stdin.close()
    process.wait(timeout=60)


@pytest.fixture(scope="module")
def declarations(worker):
    return worker({"declare": COMMANDS})


def python_valid(kind):
    """A value `kind` takes (for the arguments a case needs besides the bad one)."""
    name = kind["kind"]
    if name == "input_file" or name == "input_path":
        return "given.txt"
    if name == "input_folder":
        return "given_dir"
    if name == "output_file":
        return "out" + (kind["suffixes"][0] if kind["suffixes"] else ".csv")
    if name == "output_folder":
        return "out_dir"
    if name == "executable":
        return "true"
    if name == "number":
        return str(int(kind["least"]) if kind["integer"] else kind["least"])
    if name == "listed":
        return python_valid(kind["item"])
    return "a"


def python_bad(kind):
    """(what, value) pairs `kind` must refuse, from what it declares."""
    name = kind["kind"]
    cases = {"input_file": [("missing", "missing.txt"), ("folder", "given_dir")],
             "input_folder": [("missing", "missing_dir"), ("file", "given.txt")],
             "input_path": [("missing", "missing.txt")],
             "output_file": [("symlink", "link"), ("in a file", "afile/out")],
             "output_folder": [("symlink", "link"), ("file", "afile"), ("parent a file", "afile/out_dir")],
             "executable": [("missing", "./no-such-program"), ("folder", "given_dir")]}.get(name, [])
    if name == "output_file":
        suffix = kind["suffixes"][0] if kind["suffixes"] else ".csv"
        cases = [(what, value + suffix) for what, value in cases]
    if name == "number":
        least, most = kind["least"], kind["most"]
        below = str(int(least) - 1 if kind["integer"] else least - 1)
        cases = [("not a number", "x"), ("nan", "nan"), ("below", below)]
        if most is not None:
            cases.append(("above", str(int(most) + 1 if kind["integer"] else most * 2 + 1)))
        if kind["integer"]:
            cases.append(("not whole", f"{least}.5"))
    if name == "listed":
        item = python_valid(kind["item"])
        cases = [("repeats", f"{item}{kind['separator']}{item}")]
    return cases


def argument_name(action):
    """How a usage error names the argument: its option, or a positional's metavar (else its name)."""
    return action["options"][-1] if action["options"] else action["metavar"] or action["dest"]


def python_cases(name, actions, root):
    """Every case of command `name`: (id, argv, folder, the name its line must hold)."""
    arguments = [a for a in actions if not a["help"] and not a["flag"]]
    needed = {}
    for action in arguments:
        if action["required"]:  # one without a kind (not yet declared): a file that exists
            value = (action["choices"] or [python_valid(action) if action["kind"] else "given.txt"])[0]
            needed[action["dest"]] = [str(value)] if action["nargs"] != "..." else []

    def argv(replaced=None, values=None):
        line = []
        for action in arguments:
            own = replaced is not None and action["dest"] == replaced["dest"]
            given = values if own else needed.get(action["dest"])
            if given is None:
                continue
            line += ([action["options"][-1]] if action["options"] else []) + list(given)
        return line

    cases = [("unknown option", [UNKNOWN, *argv()], UNKNOWN)]
    for action in arguments:
        if action["kind"] is None:
            continue
        bad = list(python_bad(action))
        if action["choices"]:
            bad.append(("not a choice", "no-such-choice"))
        for what, value in bad:
            cases.append((f"{argument_name(action)} {what}", argv(action, [value]), argument_name(action)))
        many = action["nargs"] in ("+", "*") or action["append"]
        if many and not action["repeats"]:
            value = (action["choices"] or [python_valid(action)])[0]
            if action["append"]:
                line = argv(action, []) + [action["options"][-1], str(value), action["options"][-1], str(value)]
            else:
                line = argv(action, [str(value), str(value)])
            cases.append((f"{argument_name(action)} repeats", line, argument_name(action)))
    made = []
    for number, (what, line, named) in enumerate(cases):
        folder = fixtures(root / f"{name}-{number}")
        os.symlink("target.txt", folder / "link.csv")
        for suffix in (".png", ".pdf", ".svg", ".csv", ""):
            if not (folder / f"link{suffix}").exists():
                os.symlink("target.txt", folder / f"link{suffix}")
        made.append({"id": f"{name}: {what}", "what": what, "argv": line, "cwd": str(folder), "named": named})
    return made


@pytest.fixture(scope="module")
def python_results(worker, declarations, tmp_path_factory):
    root = tmp_path_factory.mktemp("arguments")
    cases = []
    for name, actions in declarations.items():
        for case in python_cases(name, actions or [], root):
            cases.append({**case, "name": name, "entry": COMMANDS[name]})
    before = {case["id"]: snapshot(pathlib.Path(case["cwd"])) for case in cases}
    results = worker({"run": [{k: case[k] for k in ("id", "name", "entry", "argv", "cwd")} for case in cases]})
    return {case["id"]: (case, results[case["id"]], before[case["id"]]) for case in cases}


def test_every_console_command_declares_its_arguments_through_a_parser(declarations):
    assert set(declarations) == set(COMMANDS)
    assert [name for name, actions in declarations.items() if actions is None] == []


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_argument_has_a_declared_kind(declarations, name):
    undeclared = [argument_name(a) for a in declarations[name] or []
                  if not a["help"] and not a["flag"] and a["kind"] is None]
    assert undeclared == [], f"{name}: arguments without a kind (overlap_bench/core/arguments.py): {undeclared}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_console_command_refuses_each_bad_argument_before_any_work(python_results, name):
    ran = [entry for entry in python_results.values() if entry[0]["name"] == name]
    assert ran, f"{name}: no case made"
    found = [p for p in (problems(*entry) for entry in ran) if p]
    assert found == [], "\n".join(found)
