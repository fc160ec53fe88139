"""The generated blocks of a Markdown file (md_generate writes them, packs reads which files they name): the markers,
their strict parsing and a block's KEY=VALUE words."""
import pathlib
import re
import shlex

from overlap_bench.core import ob_tool

OPEN = re.compile(r"^<!-- generated: (?P<spec>.*?) -->$")
CLOSE = "<!-- /generated -->"
MARKER = re.compile(r"<!-- */?generated")


def words(where, spec):
    """A block's spec split as a shell would split it; an unbalanced quote is a usage error naming `where`."""
    try:
        return shlex.split(spec)
    except ValueError as error:
        raise ob_tool.UsageError(f"{where}: '{spec}' is invalid ({error})") from None


def glob(base, pattern):
    """The files a block's glob names, relative to the Markdown file's folder `base`; an absolute or empty pattern
    is a usage error (it would name files outside the checkout)."""
    if not pattern or pathlib.PurePath(pattern).is_absolute():
        raise ob_tool.UsageError(f"'{pattern}' is invalid: a pattern relative to {base}")
    return base.glob(pattern)


def options(words):
    """KEY=VALUE words as a dict, the others as a list."""
    plain, keyed = [], {}
    for word in words:
        key, sep, value = word.partition("=")
        if sep and re.fullmatch(r"[a-z_]+", key):
            keyed[key] = value
        else:
            plain.append(word)
    return plain, keyed


def blocks(markdown_path, lines):
    """(open line index, close line index, spec) of every block; a usage error naming the line where the markers do
    not pair (nested, stray or unclosed), or where a marker is not alone on its line."""
    found, opened = [], None
    for index, line in enumerate(lines):
        where = f"{markdown_path}:{index + 1}"
        stripped = line.strip()
        if not MARKER.search(line):
            continue
        start = OPEN.match(stripped)
        if start:
            if opened is not None:
                raise ob_tool.UsageError(f"{where}: a generated block opened inside the one of line {opened[0] + 1}")
            opened = (index, start.group("spec"))
        elif stripped == CLOSE:
            if opened is None:
                raise ob_tool.UsageError(f"{where}: a generated block closed that was never opened")
            found.append((opened[0], index, opened[1]))
            opened = None
        else:
            raise ob_tool.UsageError(f"{where}: a generated-block marker not alone on its line: '{stripped[:60]}'")
    if opened is not None:
        raise ob_tool.UsageError(f"{markdown_path}:{opened[0] + 1}: a generated block never closed ({CLOSE})")
    return found
