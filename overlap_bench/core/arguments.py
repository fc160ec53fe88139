"""What every command-line tool of the suite takes its arguments through (ob_tool re-exports them, the name the tools
use): argparse whose usage errors are one line and exit 2 (`ArgumentParser`, `one_line`), the kind of every argument,
checked as it is parsed, before any work (`any_text`, `input_file`, `input_folder`, `input_path`, `output_file`,
`output_path`, `output_folder`, `output_tree`, `executable`, `number_in`, `whole`, `listed`; a list given as several
values holds each once unless it is `repeatable`), the checks of parsed values (`is_number`, `distinct`), a script's
--help description (`describe`) and a tool's parser as it declares it, nothing run (`declared`: the tests read the
kinds from it)."""
import argparse
import math
import os
import pathlib
import shutil
import stat
import sys


def one_line(message):
    """A message as the one line the suite prints: a newline or other control character a value brought into it
    written as its escape."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(message))


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are the suite's: one line on stderr naming the argument, exit 2; a list given as
    several values (nargs "+" or "*", action "append") holding a value twice is one (`--configs A A` would run A twice
    and count it as two), unless its kind is `repeatable`."""

    def error(self, message):
        print(f"{self.prog}: error: {one_line(message)}", file=sys.stderr)
        raise SystemExit(2)

    def parse_known_args(self, args=None, namespace=None):
        parsed, extras = super().parse_known_args(args, namespace)
        for action in self._actions:
            many = action.nargs in ("+", "*") or isinstance(action, argparse._AppendAction)
            values = getattr(parsed, action.dest, None)
            if not many or getattr(action.type, "repeats", False) or not isinstance(values, list):
                continue
            seen = []
            for value in values:
                if value in seen:
                    name = "/".join(action.option_strings) or action.metavar or action.dest
                    self.error(f"argument {name}: '{value}' is invalid: given twice (each value once)")
                seen.append(value)
        return parsed, extras


class Kind:
    """An argument's kind, given to argparse as its `type`: the check of one value (raising ArgumentTypeError, which
    argparse words as one line naming the argument) and what the kind is (`kind`, `params`), which the tests read to
    make the values it must refuse. `path`: the value as a pathlib.Path, not the text."""

    def __init__(self, kind, check, path=False, repeats=False, **params):
        self.kind, self.check, self.as_path, self.repeats, self.params = kind, check, path, repeats, params
        self.__name__ = kind  # argparse names the type in its own messages

    def __call__(self, text):
        value = self.check(text)
        return pathlib.Path(value) if self.as_path and isinstance(value, str) else value

    def __repr__(self):
        return f"{self.kind}{self.params or ''}"

    @property
    def path(self):
        """This kind, its value a pathlib.Path."""
        return Kind(self.kind, self.check, True, self.repeats, **self.params)


def _invalid(text, allowed):
    return argparse.ArgumentTypeError(f"'{text}' is invalid: {allowed}")


def _text(text):
    return text


def _input(text, file=True, folder=False):
    """An input that exists: a regular file (a link to one followed; readable, at most MOST_INPUT_BYTES) or a folder,
    as `file` and `folder` allow."""
    if not text:
        raise _invalid(text, "a path is needed")
    try:
        status = os.stat(text)
    except OSError:
        if file and not os.path.lexists(text) and os.path.isfile(os.path.join(os.path.dirname(text), PACK)):
            return text  # perhaps packed (overlap_bench.core.packs): its reader finds it there or says it is not
        raise _invalid(text, "no such file" if file else "not a directory (no such folder)") from None
    if stat.S_ISDIR(status.st_mode):
        if not folder:
            raise _invalid(text, "a regular file (it is a folder)")
        return text
    if not stat.S_ISREG(status.st_mode) or not file:
        raise _invalid(text, "not a directory (it is a file)" if not file
                       else "a regular file (it is a device, FIFO or socket)")
    if status.st_size > MOST_INPUT_BYTES:
        raise _invalid(text, f"{status.st_size} bytes, at most {MOST_INPUT_BYTES} are read")
    if not os.access(text, os.R_OK):
        raise _invalid(text, "not readable")
    return text


PACK = "packed.tar.gz"  # a published folder's small files, packed (overlap_bench.core.packs)
MOST_INPUT_BYTES = 1 << 30  # the largest file any reader takes (a trace of a long job; a CSV or config is far less)
any_text = Kind("text", _text)  # a word, a name, a command line: anything
input_file = Kind("input_file", _input)  # a file that exists, read
input_folder = Kind("input_folder", lambda t: _input(t, file=False, folder=True))  # a folder that exists, read
input_path = Kind("input_path", lambda t: _input(t, file=True, folder=True))  # a file or a folder that exists, read


def _output(text, suffixes):
    """A file to write: named, with one of `suffixes` (if any), in an existing, writable folder (not in a file),
    absent or a regular file: never a symbolic link (it would be replaced, not written through), a folder, device,
    FIFO or socket."""
    path = pathlib.Path(text)
    if not text:
        raise _invalid(text, "a path is needed")
    if suffixes and path.suffix.lower() not in suffixes:
        raise _invalid(text, f"a {', '.join(suffixes[:-1])} or {suffixes[-1]} file" if len(suffixes) > 1
                       else f"a {suffixes[0]} file")
    if path.parent.exists() and not path.parent.is_dir():
        raise _invalid(text, f"its folder '{path.parent}' is a file")
    if not path.parent.is_dir():
        raise _invalid(text, "its directory must exist")
    if not os.access(path.parent, os.W_OK):
        raise _invalid(text, "its directory must be writable")
    if path.is_symlink():
        raise _invalid(text, "a symbolic link (it would be replaced, not written through): name the file it points to")
    if path.is_dir():
        raise _invalid(text, "a file path, not a directory")
    if path.exists() and not path.is_file():
        raise _invalid(text, "a regular file (it is a device, FIFO or socket)")
    return text


def output_file(*suffixes):
    """The kind of a file a tool writes (--csv, -o): one of `suffixes` where given (".csv")."""
    suffixes = tuple(s.lower() for s in suffixes)
    return Kind("output_file", lambda t: _output(t, suffixes), suffixes=suffixes)


output_path = output_file(".png", ".pdf", ".svg").path  # -o/--output of a figure


def _output_folder(text):
    """A folder to write into: absent (made, its parent existing) or a folder, never a file or a symbolic link (what
    is written would land elsewhere)."""
    path = pathlib.Path(text)
    if not text or path.is_symlink():
        raise _invalid(text, "a folder (not a symbolic link)")
    if path.exists() and not path.is_dir():
        raise _invalid(text, "a folder (it is a file)")
    if path.parent.exists() and not path.parent.is_dir():
        raise _invalid(text, f"its parent '{path.parent}' is a file")
    if not path.exists() and not path.parent.is_dir():
        raise _invalid(text, f"its parent folder '{path.parent}' does not exist")
    return text


output_folder = Kind("output_folder", _output_folder)  # --out: a folder written into (made where absent)


def _output_tree(text):
    """A folder to write into, made with its parents where absent: never a file or a symbolic link, nor below a file
    (the nearest of its folders that exists is a folder)."""
    path = pathlib.Path(text)
    if not text or path.is_symlink():
        raise _invalid(text, "a folder (not a symbolic link)")
    if path.exists() and not path.is_dir():
        raise _invalid(text, "a folder (it is a file)")
    above = path.parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        raise _invalid(text, f"'{above}' above it is a file")
    return text


output_tree = Kind("output_folder", _output_tree, made=True)  # --out of a tool that makes it with its parents


def _executable(text):
    """A program to run (--predictor, --binary, a command): an executable regular file, on PATH or by its path."""
    found = shutil.which(text) if text and os.sep not in text else (text if text and os.access(text, os.X_OK) else None)
    if not found or not pathlib.Path(found).is_file():
        raise _invalid(text, "it could not run (no executable file of that name)")
    return found


executable = Kind("executable", _executable)


def _shown(number):
    """A bound as its reader wrote it: 1048576, not 1.04858e+06."""
    return str(int(number)) if float(number).is_integer() and abs(number) < 1e16 else f"{number:g}"


def _number(text, least, most, integer):
    allowed = f"from {_shown(least)} to {_shown(most)}" if math.isfinite(most) else f"at least {_shown(least)}"
    try:
        value = int(text, 10) if integer else float(text)
    except ValueError:
        raise _invalid(text, f"{'a whole' if integer else 'a'} number {allowed}") from None
    if not math.isfinite(value) or not least <= value <= most:
        raise _invalid(text, allowed)
    return value


def number_in(least, most=math.inf, integer=False):
    """The kind of a number in [least, most] (a whole number where `integer`): never NaN or infinite, never text."""
    return Kind("number", lambda t: _number(t, least, most, integer), least=least, most=most, integer=integer)


def whole(least, most=math.inf):
    """The kind of a whole number in [least, most]."""
    return number_in(least, most, integer=True)


def listed(item, separator=",", as_text=False):
    """The kind of a list in one value ("2,4,8"): items of kind `item`, each once (a repeat would run one point
    twice and count it as two); returns the list (the text itself where `as_text`)."""
    def check(text):
        try:
            items = [item(part) for part in text.split(separator)] if text else []
        except argparse.ArgumentTypeError as error:  # the whole list named, then the item
            raise _invalid(text, f"a list of {item.kind} values ({error})") from None
        if not items:
            raise _invalid(text, f"a list of {item.kind} values separated by '{separator}'")
        if not distinct(items):
            raise _invalid(text, "each value once")
        return text if as_text else items

    return Kind("listed", check, item=item, separator=separator)


def repeatable(kind):
    """`kind` in a list (nargs "+", action "append") that may hold a value twice (a command's own arguments)."""
    return Kind(kind.kind, kind.check, kind.as_path, True, **kind.params)


def is_number(value, least, most, integer=False):
    """Whether a parsed value (TOML, JSON) is a number in [least, most] (an integer where `integer`): never a boolean
    (True is no 1 MB), a string or NaN."""
    kinds = (int,) if integer else (int, float)
    return isinstance(value, kinds) and not isinstance(value, bool) and math.isfinite(value) and least <= value <= most


def distinct(items):
    """Whether a list holds no item twice (`--configs A,A` would run A twice and count it as two)."""
    return len(set(map(str, items))) == len(items)


def describe(doc):
    """A script's --help description: the first paragraph of its docstring, whole."""
    return " ".join(doc.strip().split("\n\n")[0].split())


class _Declared(BaseException):
    """Raised out of a tool by `declared` once its parser is built: nothing after the parse runs."""


def declared(function):
    """The ArgumentParser that `function` (a tool's main or cli) builds, as declared: taken when it starts parsing, so
    nothing the tool does with its arguments runs. None if it parses none."""
    original = ArgumentParser.parse_known_args

    def capture(self, *_, **__):
        raise _Declared(self)

    ArgumentParser.parse_known_args = capture
    try:
        function()
    except _Declared as taken:
        return taken.args[0]
    except SystemExit:
        return None
    finally:
        ArgumentParser.parse_known_args = original
    return None
