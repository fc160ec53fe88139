"""Every command-line tool fed malformed files and extreme options (issue 53): a corpus generated from a fixed seed,
each case run with bounded memory (RLIMIT_AS) and time. Every case must end with exit 2 and a usage line, never a
traceback, a crash or a signal, and leave no output behind. test_bad_input.py holds the hand-picked cases; this is
their generated complement, sized (two files an option, two values a number: about 60 cases) so that the fuzz tests
together (test_fuzz*.py: this, the structured, schema, atheris and libFuzzer ones) stay within five minutes on two
loaded cores."""
import os
import random
import resource
import signal
import subprocess
import sys

import pytest

from conftest import REPO
from conftest import tool as module_command

SEED = 53
MEMORY = 6 << 30  # bytes of address space a case may map: reading /dev/zero to the end would need far more
SECONDS = 60


def corpus(folder, rng):
    """Named malformed inputs, each certainly not what any reader takes (a summary, timeline, calibration, config,
    experiment or Markdown file)."""
    folder.mkdir()
    files = {
        "empty": b"",
        "binary": bytes(rng.randrange(256) for _ in range(4096)) + b"\0",
        "html": b"<!doctype html><html><body><p>not data</p></body></html>\n",
        "truncated-json": b'{"kind": "overlap-bench phase4 calibration", "ranks": 2, "model": {"hidden": 40',
        "text-numbers": (b"system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max\n"
                         b"x,phase4,overlap,two,1,5,fast,1,1,1\n"),
        "infinite-numbers": (b"rank,lane,name,iter,chunk,start_us,end_us\n0,a,b,0,0,1e999,-1e999\n"),
        "header-only": b"system,phase,mode\n",
        "json-wrong-types": (b'{"kind": 5, "schema_version": "one", "ranks": [2], "model": "big", "model_type": 5,'
                             b' "hidden_size": "wide", "num_hidden_layers": -3, "name": 1, "configs": 4}\n'),
    }
    paths = {}
    for name, content in files.items():
        path = folder / f"{name}.csv"
        path.write_bytes(content)
        paths[name] = path
    paths["dev-zero"] = "/dev/zero"
    paths["folder"] = folder
    fifo = folder / "fifo.csv"
    os.mkfifo(fifo)
    paths["fifo"] = fifo
    return paths


NUMBERS = ["nan", "inf", "-inf", "-1", "0", "1e308", "99999999999999999999", "", "0x10", "12abc"]
VALID = {"--seed": {"0"}, "--order-seed": {"0"}, "--jitter": {"0"}, "--comm-ms": {"0"}, "--compute-ms": {"0"},
         "--prefetch": {"0"}, "--blocks": {"0"}, "--iter": {"0"}}  # values an option takes: not bad inputs


def cases(build, paths, rng):
    """(name, command, the output it must not leave) for every tool: each file of the corpus where the tool reads a
    file, and extreme values of its numeric options."""
    p4 = build / "phase4_chunked_nccl"
    calibration = REPO / "tests/data/planner-4096-16-512.calibration.json"  # results/2xH200/planner's
    tools = {  # tool: (command prefix, [options taking a file; "" a positional file], [numeric options], {needed})
        "phase2": ([build / "phase2_omp_overlap" / "phase2_omp_overlap"], [],
                   ["--chunks", "--compute-ms", "--comm-ms", "--iters", "--jitter", "--hidden"], {}),
        "phase4": ([p4 / "phase4_chunked_nccl"], ["--model", "--calibration"],
                   ["--hidden", "--bucket-mb", "--batch", "--order-seed", "--prefetch"], {}),
        "phase4_predict": ([p4 / "phase4_predict"], ["--calibration", "--model"], ["--bucket-mb", "--seq"],
                           {"--calibration": calibration}),
        "phase4_model": ([p4 / "phase4_model"], ["--model"], ["--seq", "--blocks"], {"--model": "gpt2"}),
        "ob_trace": ([build / "common" / "ob_trace"], [""], [], {}),
        "verdict": (module_command("verdict.py"), [""], ["--cores"], {}),
        "plot_gantt": (module_command("plot_gantt.py"), [""], ["--iter"], {}),
        "plot_summary": (module_command("plot_summary.py"), [""], [], {}),
        "predict": (module_command("predict.py") + ["--predictor", p4 / "phase4_predict"], [""], ["--bucket-mb"], {}),
        "headline": (module_command("headline.py") + ["--dry-run"], ["--experiment", "--predictions"], ["--gpus"], {}),
        "compare": (module_command("compare.py"), ["--contenders"], ["--rounds", "--timeout", "--deadline", "--seed"],
                    {"--contender": ["a=true {csv}", "b=true {csv}"]}),
        "md_generate": (module_command("md_generate.py"), [""], [], {}),
    }
    out = paths["folder"].parent / "out"
    chosen = []
    for tool, (prefix, file_options, numeric, needed) in tools.items():
        def command(option, value):
            given = [a for k, values in needed.items() if not option.startswith(k)
                     for v in (values if isinstance(values, list) else [values]) for a in (k, v)]
            return prefix + given + ([value] if option == "" else [option, value]) + outputs(tool, out)
        for option in file_options:
            for name in rng.sample(sorted(paths), 2):
                chosen.append((f"{tool}:{option or 'file'}:{name}", command(option, paths[name])))
        for option in numeric:
            for value in rng.sample([n for n in NUMBERS if n not in VALID.get(option, ())], 2):
                chosen.append((f"{tool}:{option}={value}", command(option, value)))
    return chosen, out


def outputs(tool, out):
    """The output options a tool takes, pointed into `out` (which must stay empty)."""
    if tool in ("phase2", "phase4", "phase4_predict"):
        return ["--csv", out / "x.csv"]
    if tool in ("plot_gantt", "plot_summary"):
        return ["-o", out / "x.png"]
    if tool == "predict":
        return ["--csv", out / "x.csv", "-o", out / "x.png"]
    if tool == "headline":
        return ["--out", out / "h"]
    if tool == "compare":
        return ["--out", out / "c"]
    return []


def limit():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def test_every_tool_refuses_a_generated_corpus_of_bad_inputs(tmp_path, build_dir):
    rng = random.Random(SEED)
    paths = corpus(tmp_path / "corpus", rng)
    chosen, out = cases(build_dir, paths, rng)
    out.mkdir()
    failures = []
    for name, command in chosen:
        if not os.path.exists(command[0]):
            continue
        try:
            result = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=SECONDS,
                                    preexec_fn=limit, cwd=tmp_path, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            failures.append(f"{name}: ran past {SECONDS} s")
            continue
        err = result.stderr
        if result.returncode != 2:
            said = err.strip().splitlines()[-1:] or result.stdout[-200:]
            failures.append(f"{name}: exit {result.returncode} ({said})")
        elif "Traceback" in err or "terminate called" in err or result.returncode < 0:
            failures.append(f"{name}: {err.strip().splitlines()[-1]}")
        if any(out.iterdir()):
            failures.append(f"{name}: left {sorted(p.name for p in out.iterdir())}")
            for leftover in out.iterdir():
                subprocess.run(["rm", "-rf", str(leftover)])
    assert len(chosen) >= 55, len(chosen)
    assert not failures, "\n".join(failures)


def test_the_corpus_is_the_same_every_run(tmp_path):
    a, b = corpus(tmp_path / "a", random.Random(SEED)), corpus(tmp_path / "b", random.Random(SEED))
    assert all(pathlib_bytes(a[k]) == pathlib_bytes(b[k]) for k in a if k not in ("fifo", "folder", "dev-zero"))


def pathlib_bytes(path):
    with open(path, "rb") as source:
        return source.read()


@pytest.mark.parametrize("number", [signal.SIGSEGV, signal.SIGABRT])
def test_a_crash_would_be_seen(number):
    """The harness above tells a crash from exit 2: a process killed by a signal returns its negative number."""
    result = subprocess.run([sys.executable, "-c", f"import os; os.kill(os.getpid(), {int(number)})"])
    assert result.returncode == -number
