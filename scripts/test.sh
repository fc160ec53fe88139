#!/usr/bin/env bash
# Builds overlap-bench and runs every test through ctest: labels unit, mpi, python (pytest), slurm, and gpu (runs
# where a GPU is, skips elsewhere). Installs missing packages when run as root; otherwise prints what to install.
#
# Usage: scripts/test.sh [--preset default|debug|asan] [-L LABEL]
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

preset=default label=""
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) preset=${2:?--preset needs a value}; shift 2 ;;
    -L) label=${2:?-L needs a label}; shift 2 ;;
    -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) ob_die "unknown option '$1' (see --help)" 2 ;;
  esac
done
case "$preset" in default|debug|asan) ;; *) ob_die "--preset: '$preset' is invalid: default, debug or asan" 2 ;; esac

ob_ensure_dependencies
mkdir -p "$OB_ROOT/build"
build_dir=$(ob_build "$preset")

ob_log "ctest ($preset${label:+, label $label})"
ctest_args=(--test-dir "$build_dir" --output-on-failure -j "$(nproc)")
[ -n "$label" ] && ctest_args+=(-L "$label")
[ "$preset" = asan ] && export ASAN_OPTIONS=detect_leaks=0
ctest "${ctest_args[@]}"

ob_log "all tests passed"
