"""What every command-line tool of the suite takes its arguments through (ob_tool re-exports them, the name the tools
use): argparse whose usage errors are one line and exit 2 (`ArgumentParser`, `one_line`), the argument types checked
before any work (`output_path`, `output_folder`, `executable`), the checks of parsed values (`is_number`,
`distinct`) and a script's --help description (`describe`)."""
import argparse
import os
import pathlib
import shutil
import sys


def one_line(message):
    """A message as the one line the suite prints: a newline or other control character a value brought into it
    written as its escape."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(message))


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are the suite's: one line on stderr naming the argument, exit 2."""

    def error(self, message):
        print(f"{self.prog}: error: {one_line(message)}", file=sys.stderr)
        raise SystemExit(2)


def output_path(text):
    """argparse type of -o/--output: a .png, .pdf or .svg file in an existing, writable directory."""
    path = pathlib.Path(text)
    if path.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise argparse.ArgumentTypeError(f"'{text}' is invalid: a .png, .pdf or .svg file")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"'{text}' is invalid: its directory must exist")
    if not os.access(path.parent, os.W_OK):
        raise argparse.ArgumentTypeError(f"'{text}' is invalid: its directory must be writable")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"'{text}' is invalid: a file path, not a directory")
    if path.is_symlink():
        raise argparse.ArgumentTypeError(f"'{text}' is invalid: a symbolic link (it would be replaced, not written "
                                         "through): name the file it points to")
    if path.exists() and not path.is_file():
        raise argparse.ArgumentTypeError(f"'{text}' is invalid: a regular file (it is a device, FIFO or socket)")
    return path


def output_folder(text):
    """argparse type of --out: a folder to write into: absent (made, its parent existing) or a folder, never a file
    or a symbolic link (what is written would land elsewhere)."""
    path = pathlib.Path(text)
    if not text or path.is_symlink():
        raise argparse.ArgumentTypeError(f"'{text}' is invalid: a folder (not a symbolic link)")
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"'{text}' is invalid: a folder (it is a file)")
    if not path.exists() and not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"'{text}' is invalid: its parent folder '{path.parent}' does not exist")
    return text


def executable(text):
    """argparse type of a program to run (--predictor, --binary): an executable regular file, checked before any
    work."""
    found = shutil.which(text) if os.sep not in text else (text if os.access(text, os.X_OK) else None)
    if not found or not pathlib.Path(found).is_file():
        raise argparse.ArgumentTypeError(f"'{text}' is invalid: no executable file of that name")
    return found


def is_number(value, least, most, integer=False):
    """Whether a parsed value (TOML, JSON) is a number in [least, most] (an integer where `integer`): never a boolean
    (True is no 1 MB), a string or NaN."""
    import math

    kinds = (int,) if integer else (int, float)
    return isinstance(value, kinds) and not isinstance(value, bool) and math.isfinite(value) and least <= value <= most


def distinct(items):
    """Whether a list holds no item twice (`--configs A,A` would run A twice and count it as two)."""
    return len(set(items)) == len(items)


def describe(doc):
    """A script's --help description: the first paragraph of its docstring, whole."""
    return " ".join(doc.strip().split("\n\n")[0].split())
