#!/usr/bin/env python3
"""Runs a command under the NCCL variables a phase 4 run recorded in its metadata (`environment`: NCCL_* but the
log's own NCCL_DEBUG*), e.g. nccl-tests under the variables `--transport shm` set, so both measure one path.

Usage: with_nccl_env.py RUN.meta.json COMMAND [ARG...]
"""
import argparse
import os
import sys

from overlap_bench.core import ob_tool
from overlap_bench.core import inputs


def nccl_environment(meta_path):
    """The NCCL_* variables of a run's metadata, less those that only direct its log."""
    try:
        environment = inputs.load_json(meta_path, "META", schema="meta")["environment"]
    except (OSError, ob_tool.UsageError, KeyError, TypeError) as error:
        raise ob_tool.UsageError(f"'{meta_path}' is invalid: no metadata with an environment ({error})")
    if not isinstance(environment, dict):
        raise ob_tool.UsageError(f"'{meta_path}' is invalid: its environment is not a table of variables")
    return {k: str(v) for k, v in environment.items() if k.startswith("NCCL_") and not k.startswith("NCCL_DEBUG")}


def main(argv=None):
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("meta", type=ob_tool.input_file, metavar="RUN.meta.json", help="a phase 4 run's metadata")
    parser.add_argument("command", type=ob_tool.executable, metavar="COMMAND", help="the command to run")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, type=ob_tool.repeatable(ob_tool.any_text), metavar="ARG",
                        help="its arguments, as given")
    usage = parser.error  # a missing argument: said with the usage line

    def error(message):
        usage(f"{message} (usage: with_nccl_env.py RUN.meta.json COMMAND [ARG...])" if "required" in message
              else message)

    parser.error = error
    args = parser.parse_args(argv)
    variables = nccl_environment(args.meta)
    argv = [args.meta, args.command, *args.arguments]
    said = " ".join(f"{k}={v}" for k, v in sorted(variables.items()))
    print(f"with_nccl_env.py: {said}", file=sys.stderr, flush=True)
    try:
        os.execvpe(argv[1], argv[1:], {**os.environ, **variables})
    except OSError as error:
        raise ob_tool.UsageError(f"'{argv[1]}' could not run: {error.strerror}")


def cli():
    """The console command (pyproject.toml) and `python3 with_nccl_env.py`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
