"""The GPU benchmark's steps as data (scripts/bench_gpu.sh): each part an experiment spec,
experiments/bench/<part>.toml, its steps saying what runs (a binary or a module, on how many ranks, with which
arguments and environment), over which values (a matrix) and where (conditions); experiments/bench.toml lists the
parts in the order they run. This module checks every spec, expands the steps into commands, prints them for
bench_gpu.sh (one `name<TAB>command` a line) and writes the resolved experiment (experiment.json: the specs' files
and digests, the machine's values, every command) beside the results it names. A spec that cannot run is refused
before anything runs (exit 2, naming it)."""
import datetime
import hashlib
import itertools
import json
import os
import pathlib
import re
import shlex
import shutil
import socket
import sys

from overlap_bench.compare import headline
from overlap_bench.core import mpi_launch
from overlap_bench.core import ob_tool
from overlap_bench.core import validate

# The checkout's experiments; outside a checkout (an installed package) --parts names them: no other default.
EXPERIMENTS = ob_tool.REPO / "experiments"
CONFIG = re.compile(r"^[1-9][0-9]*,[1-9][0-9]*,[1-9][0-9]*$")
MPI = mpi_launch.MPIRUN  # multicast kept off, said once
BINARIES = {"p1": "phase1_cuda_baseline/phase1_cuda_baseline", "p3": "phase3_mpi_cuda/phase3_mpi_cuda",
            "p4": "phase4_chunked_nccl/phase4_chunked_nccl"}
# A step's keys: what it may hold, and of which type.
STEP_KEYS = {"name": str, "matrix": dict, "min_gpus": int, "requires": list, "absent": list, "prefix": str,
             "mpirun": str, "env": dict, "ranks": str, "launcher": str, "binary": str, "module": str, "args": str,
             "command": str}
# The values that are paths (quoted where they enter a command): the folders given and the binaries in the build.
PATHS = {"build", "root", "out", "sanitizer", *BINARIES}
SEVERAL = {"mpi", "configs"}  # values of several words: their words where the placeholder stands alone
ENVIRONMENT = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)-?\}")  # ${NAME-}: the environment's value, or nothing
PLACEHOLDER = re.compile(r"(?<!\$)\{([a-z][a-z0-9_]*)\}")
STEP_NAME = re.compile(r"[A-Za-z0-9_+=,-][A-Za-z0-9_.+=,-]{0,199}")  # names its log file inside --out
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def load_part(path):
    """One part's spec, every key of every step checked: a usage error names the file, the step and the key."""
    spec = ob_tool.load_toml(path, "--part")

    def bad(where, why):
        return ob_tool.UsageError(f"--part: '{path}' is invalid: {where}: {why}")

    unknown = set(spec) - {"part", "summary", "step"}
    if unknown or not isinstance(spec.get("part"), str) or not isinstance(spec.get("summary"), str):
        extra = f", not {sorted(unknown)}" if unknown else ""
        raise bad("the file", f"'part' and 'summary' (strings) and [[step]] tables only{extra}")
    if spec["part"] != path.stem or not isinstance(spec.get("step"), list) or not spec["step"]:
        raise bad("the file", f"'part' must be its file's name ('{path.stem}') and it must hold a [[step]]")
    for index, step in enumerate(spec["step"]):
        where = f"step {index} ({step.get('name', 'no name')})"
        for key, value in step.items():
            if key not in STEP_KEYS:
                raise bad(where, f"unknown key '{key}' (one of {', '.join(STEP_KEYS)})")
            if not isinstance(value, STEP_KEYS[key]) or isinstance(value, bool):
                raise bad(where, f"'{key}' must be a {STEP_KEYS[key].__name__}")
        if "name" not in step or sum(k in step for k in ("binary", "module", "command")) != 1:
            raise bad(where, "a 'name' and exactly one of 'binary', 'module' and 'command'")
        if step.get("binary", "p1") not in BINARIES:
            raise bad(where, f"'binary' must be one of {', '.join(BINARIES)}")
        if "command" in step and set(step) & {"ranks", "prefix", "mpirun", "launcher", "env", "args"}:
            raise bad(where, "a 'command' stands alone: no ranks, prefix, launcher, environment or arguments")
        if "launcher" in step and (step["launcher"] != "torchrun" or "module" not in step or "ranks" not in step):
            raise bad(where, "'launcher' is 'torchrun', for a module on 'ranks'")
        for name, values in step.get("matrix", {}).items():
            if values != "@configs" and not (isinstance(values, list) and values and
                                             all(isinstance(v, str) for v in values)):
                raise bad(where, f"matrix '{name}' must be \"@configs\" or a list of strings")
    # and whatever the checks above leave to it: the declared schema (schemas/part.schema.json)
    return validate.check(spec, "part", f"--part: '{path}' is invalid")


def load_parts(folder):
    """Every part in the order experiments/bench.toml gives, each listed once and each file listed."""
    if folder is None:
        raise ob_tool.UsageError("--parts: required outside a checkout (no experiments/bench here)")
    folder = pathlib.Path(folder)
    index = ob_tool.load_toml(folder.parent / f"{folder.name}.toml", "--parts")
    order = index.get("parts")
    files = sorted(p.stem for p in folder.glob("*.toml"))
    if not isinstance(order, list) or sorted(order) != files:
        raise ob_tool.UsageError(f"--parts: '{folder}.toml' is invalid: 'parts' must list each of {folder}/*.toml "
                                 f"once ({', '.join(files)})")
    validate.check(index, "parts", f"--parts: '{folder}.toml' is invalid")
    return {name: load_part(folder / f"{name}.toml") for name in order}


def command_of(step):
    """The step's command line, its placeholders still in it."""
    if "command" in step:
        return step["command"]
    env = step.get("env", {})
    ranks = step.get("ranks")
    if "module" in step and step.get("launcher") == "torchrun":
        program = f"python3 -m torch.distributed.run --nproc_per_node {ranks} -m {step['module']}"
    elif "module" in step:
        program = f"python3 -m {step['module']}"
    else:
        program = f"{{{step['binary']}}}"
    if ranks and step.get("launcher") != "torchrun":
        launcher = f"mpirun {step['mpirun']}" if "mpirun" in step else "{mpi}"
        exported = "".join(f" -x {k}={v}" for k, v in env.items())
        program = f"{launcher}{exported} -np {ranks} {program}"
    elif env:
        program = "env " + " ".join(f"{k}={v}" for k, v in env.items()) + " " + program
    words = [step.get("prefix", ""), program, step.get("args", "")]
    return " ".join(w for w in words if w)


def expand(step, values, configs):
    """(name, command) of each point of the step's matrix (its first key outermost); c=H,L,B also gives h, l, b."""
    matrix = [(k, configs if v == "@configs" else v) for k, v in step.get("matrix", {}).items()]
    for point in itertools.product(*(v for _, v in matrix)):
        known = dict(values)
        for (key, _), value in zip(matrix, point):
            known[key] = value
            if key == "c":
                known.update(zip("hlb", value.split(",")))
        name, command = step["name"], command_of(step)
        for key in PLACEHOLDER.findall(name + " " + command):
            if key not in known:
                raise ob_tool.UsageError(f"--part: step '{step['name']}' is invalid: no value for '{{{key}}}'")
        name = PLACEHOLDER.sub(lambda m: str(known[m.group(1)]), name)
        if not STEP_NAME.fullmatch(name) or any(CONTROL.search(str(v)) for v in known.values()):
            raise ob_tool.UsageError(f"--part: step '{step['name']}' is invalid: '{name}' (with its values) must be a "
                                     "plain name (letters, digits, _ . , + = -; no '/', no leading dot) and no value "
                                     "may hold a newline, tab or other control character")
        # every value one word of the shell text, whatever it holds (a placeholder of several words alone excepted)
        yield (name, PLACEHOLDER.sub(lambda m: str(known[m.group(1)]) if m.group(1) in SEVERAL
                                     else shlex.quote(str(known[m.group(1)])), command), argv_of(command, known))


def argv_of(command, known):
    """The step's command as an argument list (what bench_gpu.sh runs: no shell reads it): the template split into
    words first, then each placeholder filled inside its word, so that no value is ever split or read as shell;
    a word that is a placeholder of several words alone ({mpi}, {configs}) becomes those words, and ${NAME-} the
    environment's value. A script a step gives to `bash -c` gets its values quoted inside it."""
    try:
        words = shlex.split(command)
    except ValueError as error:  # a quote left open: the template is no command
        raise ob_tool.UsageError(f"--part: the command '{ob_tool.one_line(command)}' is invalid: {error}") from None
    argv = []
    for i, word in enumerate(words):
        whole = PLACEHOLDER.fullmatch(word)
        if whole and whole.group(1) in SEVERAL:
            argv += str(known[whole.group(1)]).split()
            continue
        script = i > 0 and words[i - 1] == "-c" and words[0] == "bash"
        word = PLACEHOLDER.sub(lambda m: shlex.quote(str(known[m.group(1)])) if script else str(known[m.group(1)]),
                               word)
        argv.append(word if script else ENVIRONMENT.sub(lambda m: os.environ.get(m.group(1), ""), word))
    return argv


def runs_here(step, gpus):
    return (gpus >= step.get("min_gpus", 0) and all(shutil.which(t) for t in step.get("requires", []))
            and not any(shutil.which(t) for t in step.get("absent", [])))


def resolve(parts, chosen, values, configs, gpus):
    """The steps that run, in order: [{part, name, command}]."""
    steps = []
    for part in chosen:
        for step in parts[part]["step"]:
            if runs_here(step, gpus):
                steps += [{"part": part, "name": n, "command": c, "argv": a}
                          for n, c, a in expand(step, values, configs)]
    return steps


def parse(argv):
    parser = ob_tool.ArgumentParser(prog="bench_parts.py", description=ob_tool.describe(__doc__))
    parser.add_argument("--parts", default=str(EXPERIMENTS / "bench") if EXPERIMENTS.is_dir() else None,
                        help="the folder of part specs (default: the checkout's; required outside one)")
    parser.add_argument("--part", action="append", default=[], help="a part to run (repeatable; default: all)")
    parser.add_argument("--config", action="append", default=[], help="H,L,B: the configurations' loops take these")
    parser.add_argument("--gpus", type=int, default=2, help="the GPUs the steps run on")
    parser.add_argument("--build", default=str(ob_tool.REPO / "build" / "gpu"), help="the build the binaries are in")
    parser.add_argument("--out", default="OUT", help="the results folder the steps write")
    parser.add_argument("--resolved", help="write the resolved experiment (JSON) here")
    parser.add_argument("--list", action="store_true", help="print each part with its summary, and stop")
    parser.add_argument("--argv", action="store_true", help="print each step as NUL-terminated fields: its name, its "
                        "argument count, its arguments (what bench_gpu.sh reads: no shell parses a command)")
    args = parser.parse_args(argv)
    for config in args.config:
        if not CONFIG.match(config):
            parser.error(f"--config: '{config}' is invalid: H,L,B as positive whole numbers (e.g. 4096,16,512)")
    if not 1 <= args.gpus <= 1024:
        parser.error(f"--gpus: '{args.gpus}' is invalid: from 1 to 1024")
    return args


def write_resolved(path, parts, chosen, folder, values, steps, command_line):
    """The resolved experiment: the commit, machine and date, every part's file (its digest and spec), the values the
    placeholders took and every step's command; the folder made once every check has passed."""
    def named(file):
        return str(file.relative_to(ob_tool.REPO) if file.is_relative_to(ob_tool.REPO) else file)

    files = {p: (pathlib.Path(folder) / f"{p}.toml").resolve() for p in chosen}
    resolved = {"kind": "overlap-bench-experiment", "schema_version": 1, "commit": ob_tool.commit_id(),
                "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "host": socket.gethostname(), "command_line": command_line,
                "values": {k: str(v) for k, v in values.items()},
                "parts": [{"part": p, "file": named(f), "sha256": hashlib.sha256(f.read_bytes()).hexdigest(),
                           "spec": parts[p]} for p, f in files.items()],
                "steps": steps}
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    ob_tool.write_text_atomic(path, json.dumps(resolved, indent=1) + "\n")


def main(argv=None):
    command_line = sys.argv if argv is None else ["bench_parts.py", *argv]
    args = parse(command_line[1:])
    parts = load_parts(args.parts)
    if args.list:
        print("\n".join(f"{name}: {spec['summary']}" for name, spec in parts.items()))
        return 0
    unknown = [p for p in args.part if p not in parts]
    if unknown:
        raise ob_tool.UsageError(f"--part: '{unknown[0]}' is invalid: one of {' '.join(parts)}")
    chosen = list(dict.fromkeys(args.part)) or list(parts)
    # the loops' configurations: --config, else the headline's (experiments/headline.toml beside the parts)
    configs = args.config or [c.replace("x", ",") for c in headline.headline_configs(
        pathlib.Path(args.parts).parent / headline.EXPERIMENT.name)]
    build = pathlib.Path(args.build)
    values = {"build": build, "root": ob_tool.REPO, "out": args.out, "gpus": args.gpus, "mpi": MPI,
              "configs": " ".join(configs),
              "sanitizer": shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer",
              **{key: build / path for key, path in BINARIES.items()}}
    steps = resolve(parts, chosen, values, configs, args.gpus)
    if args.resolved:
        write_resolved(args.resolved, parts, chosen, args.parts, values, steps, command_line)
    if args.argv:
        sys.stdout.write("".join(f"{field}\0" for step in steps
                                 for field in [step["name"], len(step["argv"]), *step["argv"]]))
        return 0
    for step in steps:
        print(f"{step['name']}\t{step['command']}")
    return 0


def cli():
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
