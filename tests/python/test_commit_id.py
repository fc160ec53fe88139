"""The commit a build records when its tree came without a usable .git (a remote GPU machine): named by
OVERLAP_GIT_COMMIT and checked against OVERLAP_GIT_DIGEST from scripts/commit_id.sh, so a copy that differs from the
commit builds as "<commit>-dirty", and one that cannot be checked as "<commit>-unverified"."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import REPO

GIT_COMMIT = REPO / "cmake" / "GitCommit.cmake"


def export_head(destination):
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "HEAD"], capture_output=True, check=True)
    destination.mkdir()
    subprocess.run(["tar", "-x", "-C", str(destination)], input=archive.stdout, check=True)
    return destination


def recorded(source, tmp_path, **env):
    header = tmp_path / "git_commit.hpp"
    header.unlink(missing_ok=True)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OVERLAP_GIT_")}
    environment.update(env)
    subprocess.run(["cmake", f"-DSOURCE_DIR={source}", f"-DOUTPUT={header}", "-P", str(GIT_COMMIT)], check=True,
                   env=environment, capture_output=True)
    text = header.read_text()
    return re.search(r'kGitCommit = "([^"]*)"', text).group(1), re.search(r'kSourceDigest = "([^"]*)"', text).group(1)


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs git and a checkout")
def test_a_copy_is_checked_against_the_named_commit(tmp_path):
    printed = subprocess.run([str(REPO / "scripts" / "commit_id.sh")], capture_output=True, text=True, timeout=120)
    assert printed.returncode == 0, printed.stderr
    values = dict(item.split("=", 1) for item in printed.stdout.split()[1:])
    commit, digest = values["OVERLAP_GIT_COMMIT"], values["OVERLAP_GIT_DIGEST"]
    assert re.fullmatch(r"[0-9a-f]{12}", commit) and re.fullmatch(r"[0-9a-f]{16}", digest), printed.stdout

    copy = export_head(tmp_path / "copy")  # what a remote machine gets: the files, no .git
    assert recorded(copy, tmp_path, OVERLAP_GIT_COMMIT=commit, OVERLAP_GIT_DIGEST=digest) == (commit, digest)
    assert recorded(copy, tmp_path, OVERLAP_GIT_COMMIT=commit)[0] == commit + "-unverified"
    with open(copy / "common" / "stats.cpp", "a") as source:
        source.write("// changed on the remote machine\n")
    changed, other = recorded(copy, tmp_path, OVERLAP_GIT_COMMIT=commit, OVERLAP_GIT_DIGEST=digest)
    assert changed == commit + "-dirty" and other != digest
