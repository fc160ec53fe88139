"""Issue 83, "paths and commands checked once": no command is shell text built from data. Every process the Python
tools start (overlap_bench/, scripts/, examples/) is given its arguments as a list: no string command, no shell=True,
no os.system, os.popen or asyncio shell, and no shell (`bash -c`) given text put together from values, but for the one
place whose text is the user's own command line (ob-compare's contenders, each value put into it quoted). Every shell
script (scripts/, tests/slurm, tests/install, .ci) is shellcheck-clean (.shellcheckrc: sourced files followed)."""
import ast
import shutil
import subprocess

import pytest

from conftest import REPO

PYTHON_ROOTS = ("overlap_bench", "scripts", "examples")
SHELL_ROOTS = ("scripts", "tests/slurm", "tests/install", ".ci")
SUBPROCESS = {"run", "Popen", "call", "check_call", "check_output"}
NEVER = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput"), ("subprocess", "getstatusoutput"),
         ("asyncio", "create_subprocess_shell")}
SHELLS = {"sh", "bash", "dash", "zsh", "/bin/sh", "/bin/bash", "/usr/bin/env"}
# (file, function): why its shell text is right. ob-compare's contender is a command line the user wrote (--contender
# NAME=COMMAND, run by bash -c as documented); the one value put into it, {csv}, is quoted (shlex.quote).
SHELL_TEXT_ALLOWED = {("overlap_bench/compare/compare_runs.py", "run_one"):
                      "a contender's COMMAND is the user's own command line; {csv} is put in shlex-quoted"}


def python_files():
    for root in PYTHON_ROOTS:
        yield from sorted((REPO / root).rglob("*.py"))


def called(node):
    """("subprocess", "run") for subprocess.run(...), (None, "run") for run(...) imported by name."""
    function = node.func
    if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
        return function.value.id, function.attr
    if isinstance(function, ast.Name):
        return None, function.id
    return None, None


def is_list(node, assigned):
    """Whether `node` is an argument list: a list or tuple display, a comprehension, lists joined by +, or a name
    assigned only such in its function (a string there, or anything else, is not)."""
    if isinstance(node, (ast.List, ast.Tuple, ast.ListComp)):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return is_list(node.left, assigned) or is_list(node.right, assigned)
    if isinstance(node, ast.Name):
        values = assigned.get(node.id, [])
        return bool(values) and all(is_list(v, {k: w for k, w in assigned.items() if k != node.id}) for v in values)
    return False


def shell_text(node):
    """The text a list gives a shell to parse (["bash", "-c", TEXT, ...]), or None."""
    if isinstance(node, ast.List) and len(node.elts) >= 3:
        first, second = node.elts[0], node.elts[1]
        if (isinstance(first, ast.Constant) and first.value in SHELLS and isinstance(second, ast.Constant)
                and second.value == "-c"):
            return node.elts[2]
    return None


def findings(path):
    tree = ast.parse(path.read_text(), str(path))
    relative = str(path.relative_to(REPO))
    imported = {alias.asname or alias.name: (node.module, alias.name) for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module in ("subprocess", "os", "asyncio")
                for alias in node.names}
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def scope_of(node):
        while node in parents and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node = parents[node]
        return node

    assignments = {}

    def assigned_in(scope):
        if scope not in assignments:
            names = assignments[scope] = {}  # seen at once: a function that calls itself ends here
            for node in ast.walk(scope):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                    node, ast.AugAssign) else []
                for target in targets:
                    if isinstance(target, ast.Name):
                        names.setdefault(target.id, []).append(node.value)
                # for step in ([...], [...]): each item is what the name holds
                if (isinstance(node, ast.For) and isinstance(node.target, ast.Name)
                        and isinstance(node.iter, (ast.Tuple, ast.List))):
                    names.setdefault(node.target.id, []).extend(node.iter.elts)
            # a parameter: what every call of the function in this file passes in its place
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                parameters = [a.arg for a in scope.args.args]
                for call in ast.walk(tree):
                    if isinstance(call, ast.Call) and called(call)[1] == scope.name and call is not scope:
                        for index, value in enumerate(call.args[:len(parameters)]):
                            listed = is_list(value, assigned_in(scope_of(call)))
                            names.setdefault(parameters[index], []).append(ast.List([]) if listed else ast.Constant(""))
        return assignments[scope]

    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        module, function = called(node)
        if module is None and function in imported:
            module, function = imported[function]
        scope = scope_of(node)
        name = getattr(scope, "name", "<module>")
        where = f"{relative}:{node.lineno} ({name})"
        if (module, function) in NEVER:
            found.append(f"{where}: {module}.{function} runs shell text")
        if module != "subprocess" or function not in SUBPROCESS:
            continue
        shell = [k for k in node.keywords if k.arg == "shell"]
        if shell and not (isinstance(shell[0].value, ast.Constant) and shell[0].value.value is False):
            found.append(f"{where}: shell=True")
        command = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "args"), None)
        if command is None or not is_list(command, assigned_in(scope)):
            found.append(f"{where}: its command is not a list ({ast.unparse(command) if command else 'none'})")
            continue
        text = shell_text(command)
        if text is not None and not isinstance(text, ast.Constant) and (relative, name) not in SHELL_TEXT_ALLOWED:
            found.append(f"{where}: a shell given text built from values ({ast.unparse(text)})")
    return sorted(set(found))


def test_no_process_is_started_from_shell_text():
    scanned = list(python_files())
    assert len(scanned) > 20, "the scan found the tools"
    found = [f for path in scanned for f in findings(path)]
    assert found == [], "\n".join(found)


def test_the_scan_finds_each_kind_of_shell_text(tmp_path):
    """The scan is itself tested: each way of running shell text is found, a list is not."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os, subprocess\nfrom subprocess import run\nimport asyncio\n"
                   "def f(x):\n"
                   "    os.system('ls ' + x)\n    os.popen(x)\n    subprocess.run('ls ' + x)\n"
                   "    subprocess.run(['ls', x], shell=True)\n    run(f'ls {x}')\n    command = 'ls ' + x\n"
                   "    subprocess.Popen(command)\n    subprocess.run(['bash', '-c', f'ls {x}'])\n"
                   "    asyncio.create_subprocess_shell(x)\n"
                   "def g(x):\n    command = ['ls', x]\n    command += ['-l']\n    subprocess.run(command)\n"
                   "    subprocess.run(['python3', '-c', 'print(1)', x])\n")
    global REPO
    kept, REPO = REPO, tmp_path
    try:
        found = findings(bad)
    finally:
        REPO = kept
    lines = sorted(int(f.split(":")[1].split()[0]) for f in found)
    assert lines == [5, 6, 7, 8, 9, 11, 12, 13], found


def shell_scripts():
    """Every shell script of SHELL_ROOTS: a .sh or .sbatch file, or one whose first line names a shell."""
    found = []
    for root in SHELL_ROOTS:
        for path in sorted((REPO / root).rglob("*")):
            if not path.is_file() or "consumer" in path.parts:
                continue
            first = path.read_bytes()[:80].split(b"\n")[0]
            if path.suffix in (".sh", ".sbatch") or (first.startswith(b"#!") and (b"sh" in first.split(b"/")[-1])):
                found.append(path)
    return found


def test_shell_scripts_are_shellcheck_clean():
    checker = shutil.which("shellcheck")
    if checker is None:
        pytest.skip("shellcheck is not installed (scripts/lib/common.sh's ob_ensure_dependencies installs it as root)")
    scripts = shell_scripts()
    assert len(scripts) >= 10, scripts
    done = subprocess.run([checker, "--format=gcc", *map(str, scripts)], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr
