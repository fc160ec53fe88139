"""What test_argument_kinds.py and test_argument_kinds_binaries.py share: a case's folder (an input file, a folder,
a file standing where a folder should, a link), its contents before and after, and what is wrong with a refusal."""
import pathlib

MOST_SECONDS = 5.0  # "before any work": a refusal takes milliseconds; this bound holds on two loaded cores
UNKNOWN = "--no-such-option"


def fixtures(folder):
    """What a case's folder holds: an input file, a folder, a file standing where a folder should, a link."""
    folder.mkdir(parents=True)
    (folder / "given.txt").write_text("x\n")
    (folder / "given_dir").mkdir()
    (folder / "afile").write_text("a file, not a folder\n")
    (folder / "target.txt").write_text("what the link points to\n")
    return folder


def snapshot(folder):
    return sorted((str(p.relative_to(folder)), p.is_symlink() or p.stat().st_size,
                   p.is_symlink() or p.stat().st_mtime_ns) for p in folder.rglob("*"))


def problems(case, result, before, most=MOST_SECONDS):
    """What is wrong with a refusal: not exit 2, not one line naming the argument, a file written, too slow."""
    lines = result["stderr"].strip().splitlines()
    found = []
    if result["rc"] != 2:
        found.append(f"exit {result['rc']}")
    if len(lines) != 1:
        found.append(f"{len(lines)} lines on stderr")
    elif case["named"].lstrip("-") not in lines[0]:
        found.append(f"the line does not name {case['named']}")
    if snapshot(pathlib.Path(case["cwd"])) != before:
        found.append("files written")
    if result["seconds"] > most:
        found.append(f"{result['seconds']:.1f} s")
    return f"{case['id']} {case['argv']}: {', '.join(found)}: {result['stderr'].strip()[:300]!r}" if found else None
