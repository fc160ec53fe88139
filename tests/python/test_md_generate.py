"""md_generate.py as safe as the binaries (issue 53): the markers parsed strictly (an unclosed, nested or stray block
is exit 2 naming the line, and no file is touched), every malformed block spec one line and exit 2, a symbolic link
written through."""
import subprocess

import pytest

from conftest import tool

MD = [*tool("md_generate.py")]
CSV = "a,b\n1,2\n"


def run(*args):
    return subprocess.run([*MD, *map(str, args)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("body, named", [
    ("keep\n<!-- generated: table t.csv -->\nold\nhand-written text\n", "never closed"),
    ("<!-- generated: table t.csv -->\n<!-- generated: table t.csv -->\nx\n<!-- /generated -->\n<!-- /generated -->\n",
     "opened inside"),
    ("text\n<!-- /generated -->\nmore\n", "never opened"),
    ("a <!-- generated: table t.csv --> b\n<!-- /generated -->\n", "not alone on its line"),
])
def test_unbalanced_markers_leave_the_document_untouched(tmp_path, body, named):
    (tmp_path / "t.csv").write_text(CSV)
    doc = tmp_path / "doc.md"
    doc.write_text(body)
    result = run(doc)
    assert result.returncode == 2 and named in result.stderr and "doc.md:" in result.stderr, result.stderr
    assert doc.read_text() == body and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("spec", ["table", "table missing.csv", "excerpt t.csv from=a lines=many", "pivot t.csv",
                                  "pivot t.csv rows=a columns=b values=a where=nocolon", "summary t.csv",
                                  "table t.csv columns=z", "modes nothing-*.csv", "nosuchkind x", "table 'open",
                                  "verdict", "overlaps"])
def test_every_malformed_spec_is_one_line_and_exit_2(tmp_path, spec):
    (tmp_path / "t.csv").write_text(CSV)
    doc = tmp_path / "doc.md"
    text = f"x\n<!-- generated: {spec} -->\n<!-- /generated -->\n"
    doc.write_text(text)
    result = run(doc)
    assert result.returncode == 2, (spec, result.stderr)
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert doc.read_text() == text


def test_a_linked_document_is_written_through(tmp_path):
    (tmp_path / "t.csv").write_text(CSV)
    target = tmp_path / "real.md"
    target.write_text("<!-- generated: table t.csv -->\nstale\n<!-- /generated -->\ntail\n")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    assert run(link).returncode == 0
    assert link.is_symlink() and "| 1 | 2 |" in target.read_text() and target.read_text().endswith("tail\n")
    assert run("--check", link).returncode == 0


def test_a_bad_file_among_good_ones_writes_none(tmp_path):
    (tmp_path / "t.csv").write_text(CSV)
    good, bad = tmp_path / "good.md", tmp_path / "bad.md"
    good.write_text("<!-- generated: table t.csv -->\nstale\n<!-- /generated -->\n")
    bad.write_text("<!-- generated: table t.csv -->\n")
    assert run(good, bad).returncode == 2
    assert "stale" in good.read_text()
