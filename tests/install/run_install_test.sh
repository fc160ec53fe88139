#!/usr/bin/env bash
# `cmake --install` of a build into a temporary prefix, used as a user would: an installed binary runs, an installed
# script runs, and a fifth phase (tests/install/consumer) builds against the exported package overlap_bench and runs.
# The prefix and the consumer's build are removed afterwards, also on failure.
#
# Usage: tests/install/run_install_test.sh BUILD_DIR [CXX_FLAGS [LINKER_FLAGS]]   (the flags the build used, for the
# consumer: a sanitized library needs the sanitizer at link time too)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: run_install_test.sh BUILD_DIR [CXX_FLAGS [LINKER_FLAGS]]}
cxx_flags=${2:-} linker_flags=${3:-}
tmp=$(mktemp -d /tmp/ob-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install-test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install failed"; }
"$tmp/prefix/bin/phase2_omp_overlap" --help | grep -q -- "--chunks" || fail "the installed phase2_omp_overlap --help"
PYTHONPATH="$tmp/prefix/share/overlap_bench" python3 -m overlap_bench.report.plot_gantt --help | grep -q "Gantt" ||
  fail "the installed overlap_bench.report.plot_gantt"
[ -f "$tmp/prefix/share/overlap_bench/METRICS.md" ] || fail "METRICS.md not installed"
if ! { cmake -S "$root/tests/install/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
         -DCMAKE_CXX_FLAGS="$cxx_flags" -DCMAKE_EXE_LINKER_FLAGS="$linker_flags" >"$tmp/consumer.log" 2>&1 &&
       cmake --build "$tmp/consumer" >>"$tmp/consumer.log" 2>&1; }; then
  cat "$tmp/consumer.log"
  fail "the consumer did not build"
fi
"$tmp/consumer/fifth_phase" | grep -qx "bound 13 p50 2" || fail "the consumer printed a wrong result"
echo "install-test: installed binary, script and package work"
