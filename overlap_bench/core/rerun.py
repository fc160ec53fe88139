#!/usr/bin/env python3
"""Prints the shell command that runs a result again, from its metadata alone: the working directory, the
environment variables that change a run (without those a launcher sets for each job or rank), and the launcher's
command line (mpirun, srun, torchrun) or the binary's own, with the output moved to a new summary path.

Usage: rerun.py SUMMARY.csv [--csv NEW.csv]   (default NEW: <summary stem>.rerun.csv beside it)
"""

import pathlib
import re
import shlex

from overlap_bench.core import ob_csv
from overlap_bench.core import ob_tool
from overlap_bench.core import packs

# Variables a launcher or the job sets for each run or rank: replaying them would be wrong.
LAUNCHER_SET = ("OMPI_COMM_WORLD_", "OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir",
                "OMPI_MCA_shmem_", "OMPI_MCA_mpi_yield_when_idle", "OMPI_MCA_mpi_oversubscribe", "OMPI_UNIVERSE_SIZE",
                "OMPI_APP_CTX_", "OMPI_FIRST_RANKS", "OMPI_NUM_APP_CTX", "OMPI_ARGV", "OMPI_COMMAND",
                "OMPI_FILE_LOCATION", "OMPI_MCA_ompi_", "OMPI_MCA_hwloc_", "PMIX_", "SLURM_")
OUTPUT_OPTIONS = ("--csv", "--timeline")


def string_list(value, key):
    """A metadata list of strings, or a usage error naming the key."""
    if not isinstance(value, list) or not value or not all(isinstance(word, str) and word for word in value):
        raise ob_tool.UsageError(f"the metadata's {key} must be a non-empty list of words")
    return list(value)


def command_of(meta):
    """The argv to run again: the launcher's when one started the run, else rank 0's own."""
    launcher = meta.get("launcher", {})
    if not isinstance(launcher, dict):
        raise ob_tool.UsageError("the metadata's launcher must be an object")
    if launcher.get("name", "none") != "none" and launcher.get("command_line"):
        return string_list(launcher["command_line"], "launcher.command_line")
    if "command_line" not in meta:
        raise ob_tool.UsageError("the metadata holds no command_line")
    return string_list(meta["command_line"], "command_line")


def with_output(argv, csv):
    """argv with --csv/--timeline (either spelling) dropped and `--csv csv` added."""
    kept, skip = [], False
    for word in argv:
        if skip:
            skip = False
            continue
        if word in OUTPUT_OPTIONS:
            skip = True
            continue
        if any(word.startswith(option + "=") for option in OUTPUT_OPTIONS):
            continue
        kept.append(word)
    return kept + ["--csv", str(csv)]


def rerun_command(summary, csv=None):
    meta_path = ob_csv.meta_path(summary)
    if not packs.exists(meta_path):
        raise ob_tool.UsageError(f"{summary}: no metadata beside it ({meta_path.name})")
    try:
        meta = packs.read_json(meta_path, "SUMMARY's metadata", schema="meta")
    except OSError as error:
        raise ob_tool.UsageError(f"{meta_path}: not readable ({error.strerror})") from None
    if not isinstance(meta, dict) or meta.get("suite") != "overlap-bench":
        raise ob_tool.UsageError(f"{meta_path}: not the metadata of an overlap-bench run")
    csv = pathlib.Path(csv) if csv else summary.with_name(summary.stem + ".rerun.csv")
    environment = meta.get("environment", {})
    if not isinstance(environment, dict) or not all(isinstance(v, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)
                                                    for k, v in environment.items()):
        raise ob_tool.UsageError(f"{meta_path}: the metadata's environment must map variable names (letters, digits "
                                 "and _) to strings")
    environment = {k: v for k, v in sorted(environment.items()) if not k.startswith(LAUNCHER_SET)}
    try:
        argv = with_output(command_of(meta), csv.resolve())
    except ob_tool.UsageError as error:
        raise ob_tool.UsageError(f"{meta_path}: {error}") from None
    words = ["env"] + [f"{k}={v}" for k, v in environment.items()] + argv if environment else argv
    directory = meta.get("working_directory", ".")
    if not isinstance(directory, str) or not directory:
        raise ob_tool.UsageError(f"{meta_path}: the metadata's working_directory must be a path")
    if "\ufffd" in directory:  # the binaries write a name that is not UTF-8 with replacement characters
        raise ob_tool.UsageError(f"{meta_path}: the run's folder name was not UTF-8 and cannot be rebuilt from the "
                                f"metadata ('{directory}'): cd there yourself and run the command it gives with --csv")
    return f"cd {shlex.quote(directory)} && {shlex.join(words)}"


def main():
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("summary", type=ob_tool.input_file.path, help="a summary CSV with its .meta.json beside it")
    parser.add_argument("--csv", type=ob_tool.output_file().path, help="where the rerun writes its summary")
    args = parser.parse_args()
    if not packs.exists(args.summary):
        raise ob_tool.UsageError(f"{args.summary}: no such file")
    print(rerun_command(args.summary, args.csv))
    return 0


def cli():
    """The console command (pyproject.toml) and `python3 rerun.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
