#!/usr/bin/env python3
"""A published folder's small files packed into one (results/README.md, "Size"): every file of a folder under
results/ that no Markdown names (a link, or a source of a generated block) and that is no figure is kept in that
folder's `packed.tar.gz`, so that a clone holds a few hundred files of data rather than thousands, each rounded up to
a disk block. The suite's readers take a packed file where its loose one is asked for (`read_bytes`, `read_text`,
`read_csv`, `exists`, `glob`, `rglob`); `tar xzf DIR/packed.tar.gz -C DIR` puts a folder's files back.

  python3 -m overlap_bench.core.packs pack results/    packs every folder's unnamed files (an existing pack is extended)
  python3 -m overlap_bench.core.packs unpack results/  puts every packed file back beside its pack, removes the packs

Packs are made reproducibly (members sorted, no times, owners or modes of the machine that made them)."""
import functools
import gzip
import io
import os
import pathlib
import re
import tarfile
import zlib

from overlap_bench.core import inputs
from overlap_bench.core import md_blocks
from overlap_bench.core import ob_tool

PACK = ob_tool.PACK
LINK = re.compile(r"\]\(([^)#\s]+)")


MOST_MEMBER_BYTES = 64 << 20  # a packed file as it unpacks (the largest published file is far less)
MOST_PACK_BYTES = 256 << 20  # a pack's members together


@functools.lru_cache(maxsize=None)
def _members(pack):
    """Every member of a pack, by name (read once). A pack holds the files of its own folder by their plain names:
    a member named with a folder, `..` or an absolute path (it would be written outside the folder), a link, or
    members larger than the caps as they unpack are a usage error naming the pack, before anything is read."""
    try:
        _headers(pack)
        with tarfile.open(pack, "r:gz") as archive:
            members = archive.getmembers()
            total = 0
            for m in members:
                if not (m.isfile() and m.name == pathlib.PurePosixPath(m.name).name and m.name not in ("", ".", "..")):
                    raise ob_tool.UsageError(f"{pack}: member '{m.name}' is not a plain file of the pack's folder")
                total += m.size
                if m.size > MOST_MEMBER_BYTES or total > MOST_PACK_BYTES:
                    raise ob_tool.UsageError(f"{pack}: member '{m.name}' unpacks past the cap "
                                             f"({MOST_MEMBER_BYTES >> 20} MiB a file, {MOST_PACK_BYTES >> 20} in all)")
            return {m.name: archive.extractfile(m).read() for m in members}
    except (tarfile.TarError, EOFError, OSError, zlib.error) as error:
        if isinstance(error, OSError) and not isinstance(error, EOFError) and error.filename:
            raise
        raise ob_tool.UsageError(f"{pack}: not a readable pack ({type(error).__name__})") from None


def _headers(pack):
    """Reads a pack's tar headers as the bytes inflate, before tarfile sees them: every header's size (a pax or GNU
    long-name header's too, which tarfile would read whole into memory) within the cap of a member, the whole
    within the caps of the pack; a usage error naming the pack otherwise (a corrupt gzip stream included)."""
    with inputs.open_input(pack, "PACK", inflated=MOST_PACK_BYTES + (64 << 20)) as stream:
        while len(header := stream.read(512)) == 512 and header.strip(b"\0"):
            field = header[124:136]
            try:
                size = int.from_bytes(field[1:], "big") if field[0] & 0x80 else int(field.strip(b"\0 ") or b"0", 8)
            except ValueError:
                raise ob_tool.UsageError(f"{pack}: not a readable pack (a header's size is no number)") from None
            if size > MOST_MEMBER_BYTES:
                raise ob_tool.UsageError(f"{pack}: a member or header unpacks past the cap ({MOST_MEMBER_BYTES >> 20} "
                                         "MiB a file)")
            for _ in range(-(-size // 512)):
                stream.read(512)


def _packed(path):
    path = pathlib.Path(path)
    pack = path.parent / PACK
    return _members(pack.resolve()).get(path.name) if pack.is_file() else None


def exists(path):
    """A loose file or a packed one."""
    return pathlib.Path(path).is_file() or _packed(path) is not None


def read_bytes(path, option="FILE", most=ob_tool.MOST_INPUT_BYTES):
    """The loose file's bytes (through the input policy: at most `most`), or its folder's packed member's; a usage
    error naming the option where neither holds it, or where the loose one is a folder, FIFO or device."""
    path = pathlib.Path(path)
    data = None if os.path.lexists(path) else _packed(path)
    return ob_tool.require_input(path, option, most).read_bytes() if data is None else data


def read_text(path, option="FILE", most=ob_tool.MOST_INPUT_BYTES):
    return read_bytes(path, option, most).decode(errors="replace")


def read_json(path, option="FILE", most=ob_tool.MOST_SMALL_BYTES, schema=None):
    """A loose or packed JSON file through the one JSON loader (inputs.load_json: size and nesting bounded as the
    bytes pass; given `schema`, checked against that declared schema); any fault a usage error naming the option
    and the file."""
    path = pathlib.Path(path)
    if path.exists() or not exists(path):
        return inputs.load_json(path, option, most, schema=schema)
    return inputs.checked(inputs.parse_json(read_bytes(path), f"{option}: '{path}' is invalid"), schema, option, path)


def read_csv(path, option="CSV", required=(), most=ob_tool.MOST_INPUT_BYTES, **options):
    """The one CSV loader: pandas.read_csv of a loose (through the input policy: at most `most` bytes) or packed CSV
    (gzipped where its name ends in .gz, its inflated size bounded too); an empty, column-less or unparsable file, or
    one without a `required` column, is a usage error naming the option and the file."""
    import pandas as pd

    path = pathlib.Path(path)
    where = f"{option}: '{path}' is invalid"
    data = read_bytes(path, option, most)
    if str(path).endswith(".gz"):
        data = inputs.gunzip(data, path, option, most)
    try:
        frame = pd.read_csv(io.BytesIO(data), **options)
    except pd.errors.EmptyDataError:
        raise ob_tool.UsageError(f"{where}: an empty file (no header)") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as error:
        raise ob_tool.UsageError(f"{where}: not a CSV ({str(error).splitlines()[0]})") from None
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ob_tool.UsageError(f"{where}: no column '{missing[0]}' (needed: {', '.join(required)})")
    return frame


def glob(folder, pattern):
    """The folder's loose files matching `pattern`, and its packed ones as the paths they would have loose, sorted."""
    folder = pathlib.Path(folder)
    found = {p for p in folder.glob(pattern) if p.is_file() and p.name != PACK}
    if (folder / PACK).is_file():
        found |= {folder / n for n in _members((folder / PACK).resolve()) if pathlib.PurePath(n).match(pattern)}
    return sorted(found)


def rglob(root, pattern):
    """Loose files under `root` matching `pattern`, and packed ones as the paths they would have loose, sorted."""
    root = pathlib.Path(root)
    folders = {root} | {p for p in root.rglob("*") if p.is_dir()}
    return sorted(path for folder in folders for path in glob(folder, pattern))


def named_by_markdown(repo):
    """Every file a Markdown file of the repository links to or names as a generated block's source (globs expanded;
    the blocks parsed as md_generate parses them)."""

    named = set()
    for page in repo.rglob("*.md"):
        if ".git" in page.parts or "build" in page.relative_to(repo).parts[:1]:
            continue
        text = page.read_text(errors="replace")
        named |= {(page.parent / target).resolve() for target in LINK.findall(text)}
        for _open, _close, spec in md_blocks.blocks(page, text.split("\n")):
            plain, _keyed = md_blocks.options(md_blocks.words(page, spec)[1:])
            named |= {p.resolve() for word in plain for p in md_blocks.glob(page.parent, word)}
    return named


def pack(root, repo=ob_tool.REPO):
    """Packs every folder's files under `root` (but its runs/) that no Markdown names and that are no figure, page or
    symbolic link (a link's target may lie outside the tree)."""
    named, root = named_by_markdown(pathlib.Path(repo)), pathlib.Path(root)
    folders = 0
    for folder in sorted({p.parent for p in root.rglob("*") if p.is_file()}):
        if folder.relative_to(root).parts[:1] == ("runs",):  # results/runs/: ad-hoc runs, never published
            continue
        loose = [p for p in sorted(folder.iterdir()) if p.is_file() and not p.is_symlink() and p.name != PACK
                 and p.suffix not in {".md", ".png"} and p.resolve() not in named]
        if not loose:
            continue
        members = dict(_members((folder / PACK).resolve())) if (folder / PACK).is_file() else {}
        members.update({p.name: p.read_bytes() for p in loose})
        _write(folder / PACK, members)
        for path in loose:
            path.unlink()
        folders += 1
    return folders


def _write(target, members):
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9, mtime=0, filename="") as zipped:
        with tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for name in sorted(members):
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(members[name]), 0o644
                archive.addfile(info, io.BytesIO(members[name]))
    ob_tool.write_bytes_atomic(target, buffer.getvalue())
    _members.cache_clear()


def unpack(root):
    """Puts every packed file under `root` back beside its pack and removes the packs; refused before anything is
    written where a loose file or link of a member's name is there (it would be replaced)."""
    packs = sorted(pathlib.Path(root).rglob(PACK))
    there = next((path.parent / n for path in packs for n in _members(path.resolve())
                  if os.path.lexists(path.parent / n)), None)
    if there is not None:
        raise ob_tool.UsageError(f"{there}: already there beside its pack (unpacking would replace it): move it away")
    for path in packs:
        for name, data in _members(path.resolve()).items():
            ob_tool.write_bytes_atomic(path.parent / name, data)
        path.unlink()
    _members.cache_clear()
    return len(packs)


def main():
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(__doc__))
    parser.add_argument("action", type=ob_tool.any_text, choices=["pack", "unpack"])
    parser.add_argument("root", type=ob_tool.input_folder.path,
                        help="the folder whose subfolders to pack or unpack (results/)")
    args = parser.parse_args()
    if not args.root.is_dir():
        raise ob_tool.UsageError(f"{args.root}: not a directory")
    count = pack(args.root) if args.action == "pack" else unpack(args.root)
    print(f"packs: {count} folder(s) {args.action}ed under {args.root}")
    return 0


def cli():
    """The console command ob-packs (pyproject.toml) and `python3 -m overlap_bench.core.packs`."""
    raise SystemExit(ob_tool.main_guard(main))


if __name__ == "__main__":
    cli()
