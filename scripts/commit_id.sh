#!/usr/bin/env bash
# Prints the two variables that let a build on a copy of this tree without a usable .git (a remote GPU machine)
# name its commit and check the copy against it (cmake/GitCommit.cmake): the commit of HEAD, and the digest of the
# binaries' sources in a clean export of HEAD. A copy that differs from HEAD then builds as "<commit>-dirty".
#
# Usage: eval "$(scripts/commit_id.sh)"; then run the build there with OVERLAP_GIT_COMMIT and OVERLAP_GIT_DIGEST set.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
case "${1:-}" in -h|--help) ob_usage "$0"; exit 0 ;; "") ;; *) ob_die "unknown option '$1' (see --help)" 2 ;; esac
commit=$(git -C "$OB_ROOT" rev-parse --short=12 HEAD) || ob_die "not a git checkout: $OB_ROOT"
export_dir=$(mktemp -d)
trap 'rm -rf "$export_dir"' EXIT
git -C "$OB_ROOT" archive HEAD | tar -x -C "$export_dir"
digest=$(cmake -DSOURCE_DIR="$export_dir" -DPRINT_DIGEST=ON -P "$OB_ROOT/cmake/GitCommit.cmake")
echo "export OVERLAP_GIT_COMMIT=$commit OVERLAP_GIT_DIGEST=$digest"
