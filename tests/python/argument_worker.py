"""Runs the suite's console commands in one process for test_argument_kinds.py: reads a JSON request on stdin and
writes the answer on stdout. {"declare": {NAME: "module:function"}}: each command's arguments as its parser declares
them (arguments.declared), nothing run. {"run": [CASE...]}: each case's command run with its argv in its folder, in a
child per command forked after every module was imported, its cases one after another (a command's own start,
imports included, is not what is timed: its checks of the arguments are); each case's exit code, output and seconds.
Two children at a time. A request a line, an answer a line."""
import argparse
import gc
import importlib
import json
import math
import os
import signal
import sys
import tempfile
import time

from overlap_bench.core import arguments


def entry(target):
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)


def jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, arguments.Kind):
        return kind_of(value)
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)


def kind_of(kind):
    if not isinstance(kind, arguments.Kind):
        return {"kind": None, "type": getattr(kind, "__name__", str(kind))}
    return {"kind": kind.kind, "repeats": kind.repeats, **{k: jsonable(v) for k, v in kind.params.items()}}


def declare(commands):
    answer = {}
    for name, target in commands.items():
        sys.argv = [name]
        parser = arguments.declared(entry(target))
        if parser is None:
            answer[name] = None
            continue
        answer[name] = [{
            "options": list(action.option_strings), "dest": action.dest, "metavar": jsonable(action.metavar),
            "nargs": jsonable(action.nargs), "required": bool(action.required), "flag": action.nargs == 0,
            "append": isinstance(action, argparse._AppendAction), "help": isinstance(action, argparse._HelpAction),
            "choices": jsonable(list(action.choices)) if action.choices is not None else None,
            **kind_of(action.type)} for action in parser._actions]
    return answer


def run_cases(cases, results):
    """In a child: each case of one command in turn, each with its own folder, argv and captured output; a line of
    JSON per case into `results` as it ends (a case that never ends leaves the ones after it unanswered)."""
    gc.disable()
    saved = os.dup(1), os.dup(2)
    with open(results, "w") as sink:
        for case in cases:
            capture = tempfile.mkdtemp(prefix="ob-args-")
            os.chdir(case["cwd"])
            for fd, name in ((1, "out"), (2, "err")):
                handle = os.open(os.path.join(capture, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(handle, fd)
                os.close(handle)
            sys.argv = [case["name"], *case["argv"]]
            code = 99
            start = time.monotonic()
            try:
                entry(case["entry"])()
                code = 0
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
            except BaseException as error:  # noqa: BLE001 -- reported as its own code
                print(f"worker: {type(error).__name__}: {error}", file=sys.stderr)
            seconds = time.monotonic() - start
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            texts = {}
            for name in ("out", "err"):
                with open(os.path.join(capture, name), errors="replace") as source:
                    texts[name] = source.read()
                os.unlink(os.path.join(capture, name))
            os.rmdir(capture)
            sink.write(json.dumps({"id": case["id"], "rc": code, "stdout": texts["out"], "stderr": texts["err"],
                                   "seconds": seconds}) + "\n")
            sink.flush()


def run(cases, at_once=2, limit=60.0):
    """Every case, a child per command (forked once every module is imported), two at a time."""
    for case in cases:
        entry(case["entry"])  # every module imported before the first fork
    gc.freeze()  # a child's collections then leave the parent's objects (and their pages) alone: a fork stays cheap
    groups = {}
    for case in cases:
        groups.setdefault(case["entry"], []).append(case)
    pending, running, results = list(groups.values()), {}, {}
    folder = tempfile.mkdtemp(prefix="ob-args-results-")
    while pending or running:
        while pending and len(running) < at_once:
            group = pending.pop(0)
            answers = os.path.join(folder, f"{len(results)}-{len(pending)}.jsonl")
            pid = os.fork()
            if pid == 0:
                try:
                    run_cases(group, answers)
                finally:
                    os._exit(0)
            running[pid] = (group, answers, time.monotonic())
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            for pid, (group, answers, start) in list(running.items()):
                if time.monotonic() - start > limit:
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)
            continue
        group, answers, start = running.pop(pid)
        with open(answers) as source:
            for line in source:
                answer = json.loads(line)
                results[answer.pop("id")] = answer
        os.unlink(answers)
        for case in group:  # one that never ended (or the child's end): said as such
            results.setdefault(case["id"], {"rc": f"no answer (child {os.waitstatus_to_exitcode(status)})",
                                            "stdout": "", "stderr": "", "seconds": math.inf})
    os.rmdir(folder)
    return results


if __name__ == "__main__":
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what a module prints as it is imported does not mix with the answers
    for line in sys.stdin:  # a request a line, an answer a line: the modules are imported once for all of them
        request = json.loads(line)
        answer = declare(request["declare"]) if "declare" in request else run(request["run"])
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
