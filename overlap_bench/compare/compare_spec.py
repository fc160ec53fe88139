"""ob-compare's command line: processes and contenders (a command of its own, or a row of a shared process:
@PROC[KEY=VALUE,...]), groups (LABEL@GROUP) and the baselines resolved in each, every option checked before anything
runs (compare.py's docstring says what each means)."""
import pathlib
import random
import re
from typing import NamedTuple

from overlap_bench.core import ob_tool

PROCESS_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_+-]{0,99}$")  # no dot: its files are r<round>-<name>.csv, .log, ...
PART = r"[A-Za-z0-9][A-Za-z0-9_.+-]*"
CONTENDER_NAME = re.compile(rf"^{PART}(@{PART})?$")
SELECTION = re.compile(r"^@([A-Za-z0-9][A-Za-z0-9_+-]*)(?:\[(.*)\])?$")
KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Contender(NamedTuple):
    name: str
    process: str
    mode: str
    selector: tuple = ()  # ((column, value), ...)

    @property
    def group(self):
        return self.name.rpartition("@")[2] if "@" in self.name else ""

    @property
    def label(self):
        return self.name.rpartition("@")[0] if "@" in self.name else self.name

    def describe(self):
        keys = ",".join(f"{k}={v}" for k, v in self.selector)
        return f"{self.mode} row of {self.process}" + (f" with {keys}" if keys else "")


def parse_process(text):
    name, sep, command = (part.strip() for part in text.partition("="))
    if not sep or not command:
        raise ob_tool.UsageError(f"--process: '{text}' is invalid: NAME=COMMAND")
    if not PROCESS_NAME.match(name):
        raise ob_tool.UsageError(f"--process: '{name}' is invalid: a name of letters, digits and _ + - (no dot: "
                                "the name names its files)")
    if "{csv}" not in command:
        raise ob_tool.UsageError(f"--process: '{name}': its command must write its summary to {{csv}}")
    return name, command


def parse_selector(text, name):
    pairs = []
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not KEY.match(key) or not value:
            raise ob_tool.UsageError(f"--contender: '{name}': '{item}' is invalid: KEY=VALUE, KEY a column's name")
        pairs.append((key, value))
    return tuple(pairs)


def parse_contender(text, default_mode):
    """'name[:mode]=command' or 'name[:mode]=@process[key=value,...]' -> (Contender, (process, command) or None)."""
    head, sep, body = text.partition("=")
    name, _, mode = head.partition(":")
    name, mode, body = name.strip(), (mode.strip() or default_mode), body.strip()
    if not sep or not body:
        raise ob_tool.UsageError(f"--contender: '{text}' is invalid: NAME=COMMAND, NAME=@PROCESS[KEY=VALUE,...] "
                                "(or NAME:MODE=...)")
    if not PROCESS_NAME.match(mode):
        raise ob_tool.UsageError(f"--contender: '{name}:{mode}' is invalid: MODE a row's mode (letters, digits and "
                                 "_ + -)")
    if not CONTENDER_NAME.match(name) or len(name) > 100:
        raise ob_tool.UsageError(f"--contender: '{name}' is invalid: a name of letters, digits and _ . + -, "
                                "optionally @GROUP")
    selection = SELECTION.match(body)
    if selection:
        return Contender(name, selection.group(1), mode, parse_selector(selection.group(2), name)), None
    if not PROCESS_NAME.match(name):
        raise ob_tool.UsageError(f"--contender: '{name}' is invalid: a contender with a command of its own names its "
                                "files: letters, digits and _ + - (no dot, no @)")
    if "{csv}" not in body:
        raise ob_tool.UsageError(f"--contender: '{name}': its command must write its summary to {{csv}}")
    return Contender(name, name, mode), (name, body)


def read_lines_file(path, option):
    """One item per line; blank lines and lines starting with # are skipped."""
    try:
        lines = ob_tool.require_input(path, option, 16 << 20).read_text().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ob_tool.UsageError(f"{option}: '{path}' cannot be read ({error})") from None
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def resolve_baselines(baselines, contenders):
    """Each baseline (names joined by commas) per group: a name without @ is its label in that group. Returns
    [(spec, group, members)] for every group where a member exists; a name found in no group is a usage error."""
    names = {c.name for c in contenders}
    groups = list(dict.fromkeys(c.group for c in contenders))
    resolved = []
    for spec in baselines:
        members = spec.split(",")
        for member in members:
            if not any((member if "@" in member or not g else f"{member}@{g}") in names for g in groups):
                raise ob_tool.UsageError(f"--baseline: '{member}' is invalid: not a contender "
                                        f"({', '.join(sorted(names)[:8])}{', ...' if len(names) > 8 else ''})")
        for group in groups:
            found = [m for m in (x if "@" in x or not group else f"{x}@{group}" for x in members) if m in names]
            if found:
                resolved.append((spec, group, list(dict.fromkeys(found))))
    return resolved


def parse_args(argv=None):
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("--contender", action="append",
                        default=[], type=ob_tool.any_text, metavar="NAME[:MODE]=COMMAND|@PROCESS[K=V,...]",
                        help="a contender: a command of its own that writes a summary CSV to {csv}, or a row of a "
                             "--process (repeatable)")
    parser.add_argument("--contenders", type=ob_tool.input_file, metavar="FILE", help="more contenders, one a line")
    parser.add_argument("--process", action="append", default=[], type=ob_tool.any_text, metavar="NAME=COMMAND",
                        help="a process run once per round whose summary several contenders read (repeatable)")
    parser.add_argument("--baseline", action="append", default=[], type=ob_tool.any_text, metavar="NAME[,NAME...]",
                        help="the contender(s) every ratio divides by; several joined by commas: the fastest of "
                             "them; labels without @GROUP apply in every group (repeatable; default: the first "
                             "contender)")
    parser.add_argument("--mode", type=ob_tool.any_text, default="overlap",
                        help="the summary row read from each CSV (default: overlap)")
    parser.add_argument("--compute-mode", type=ob_tool.any_text, default="compute",
                        help="the row that is a contender's compute-only step, for the factor split (default: "
                             "compute)")
    parser.add_argument("--also-mode", action="append", default=[], type=ob_tool.any_text, metavar="MODE",
                        help="also summarise this row of the same runs into compare.MODE.csv (repeatable)")
    parser.add_argument("--rounds", type=ob_tool.whole(2, 1000), default=5,
                        help="rounds; each runs every process once (default: 5)")
    parser.add_argument("--seed", type=ob_tool.whole(0, 2 ** 32 - 1),
                        help="seed of the order and of the bootstrap (default: drawn, recorded)")
    parser.add_argument("--timeout", type=ob_tool.number_in(1, 1e6), default=3600,
                        help="seconds one run may take (default: 3600)")
    parser.add_argument("--deadline", type=ob_tool.number_in(1, 1e7), metavar="SECONDS",
                        help="seconds the whole comparison may take: rounds that would not fit are not started, a "
                             "round cut by it is dropped, the complete rounds (at least 2) are summarised")
    parser.add_argument("--out", required=True, type=ob_tool.output_tree,
                        help="folder to write (created; must not hold a comparison yet)")
    args = parser.parse_args(argv)
    try:
        validate(args)
    except ob_tool.UsageError as error:
        parser.error(str(error))
    return args


def validate(args):
    texts = args.contender + (read_lines_file(args.contenders, "--contenders") if args.contenders else [])
    processes = dict(parse_process(text) for text in args.process)
    if len(processes) != len(args.process):
        raise ob_tool.UsageError("--process: a name is given twice")
    contenders = []
    for text in texts:
        contender, own = parse_contender(text, args.mode)
        if own:
            if own[0] in processes:
                raise ob_tool.UsageError(f"--contender: '{own[0]}' is named twice (a --process has that name)")
            processes[own[0]] = own[1]
        elif contender.process not in processes:
            raise ob_tool.UsageError(f"--contender: '{contender.name}': no --process '{contender.process}'")
        contenders.append(contender)
    names = [c.name for c in contenders]
    if len(names) < 2:
        raise ob_tool.UsageError("--contender: at least two contenders are needed to compare")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ob_tool.UsageError(f"--contender: '{duplicates[0]}' is named twice")
    unread = [p for p in processes if not any(c.process == p for c in contenders)]
    if unread:
        raise ob_tool.UsageError(f"--process: '{unread[0]}' is invalid: no contender reads it")
    args.processes, args.contenders_parsed = processes, contenders
    args.baseline = args.baseline or [contenders[0].label]
    args.resolved = resolve_baselines(args.baseline, contenders)
    checks = [("--rounds", args.rounds, 2 <= args.rounds <= 1000, "2 to 1000"),
              ("--seed", args.seed, args.seed is None or 0 <= args.seed < 2 ** 32, "0 to 2^32-1"),
              ("--timeout", args.timeout, 1 <= args.timeout <= 1e6, "seconds from 1 to 1e6"),
              ("--deadline", args.deadline, args.deadline is None or 1 <= args.deadline <= 1e7,
               "seconds from 1 to 1e7")]
    for option, value, ok, allowed in checks:
        if not ok:
            raise ob_tool.UsageError(f"{option}: '{value}' is invalid: {allowed}")
    for mode in [args.mode, args.compute_mode, *args.also_mode]:
        if not PROCESS_NAME.match(mode):
            raise ob_tool.UsageError(f"--mode: '{mode}' is invalid: a row's mode")
    for mode in args.also_mode:
        if mode == args.mode:
            raise ob_tool.UsageError(f"--also-mode: '{mode}' is invalid: a row's mode other than --mode ({args.mode})")
    out = pathlib.Path(args.out)
    if out.exists() and not out.is_dir():
        raise ob_tool.UsageError(f"--out: '{args.out}' is invalid: not a folder")
    ob_tool.require_outputs([(f"--out ({name})", out / name) for name in
                            ("compare.csv", "compare.rounds.csv", "compare.meta.json", "compare.png",
                             *(f"compare.{mode}.csv" for mode in args.also_mode))], created=True)
    if (out / "compare.csv").exists():
        raise ob_tool.UsageError(f"--out: '{args.out}' is invalid: it already holds a comparison (compare.csv)")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2 ** 32)
