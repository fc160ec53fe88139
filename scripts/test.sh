#!/usr/bin/env bash
# Builds overlap-bench and runs every test through ctest: labels unit, mpi, python (pytest), slurm, and gpu (runs
# where a GPU is, skips elsewhere); then builds the CPU code again under ASan + UBSan (the asan preset) and runs its
# unit and mpi tests, where any report fails the run. Installs missing packages when run as root; otherwise prints
# what to install.
#
# Usage: scripts/test.sh [--preset default|debug|asan] [-L LABEL]   (a preset or label given: only that run)
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

presets=() label=""
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) presets+=("${2:?--preset needs a value}"); shift 2 ;;
    -L) label=${2:?-L needs a label}; shift 2 ;;
    -h|--help) ob_usage "$0"; exit 0 ;;
    *) ob_die "unknown option '$1' (see --help)" 2 ;;
  esac
done
for preset in "${presets[@]}"; do
  case "$preset" in default|debug|asan) ;; *) ob_die "--preset: '$preset' is invalid: default, debug or asan" 2 ;; esac
done
full=0
[ "${#presets[@]}" -eq 0 ] && [ -z "$label" ] && full=1
[ "${#presets[@]}" -gt 0 ] || presets=(default)
[ "$full" -eq 1 ] && presets+=(asan)

OB_NEED_TESTS=1 ob_ensure_dependencies
# Said up front: the two-node Slurm test installs Slurm when it is missing (as root), which takes a while.
if [ "$(id -u)" -eq 0 ] && ! command -v slurmctld >/dev/null 2>&1 && { [ -z "$label" ] || [[ "slurm" =~ ^($label)$ ]]; }; then
  ob_log "the two-node Slurm test will apt-get install slurm-wlm and munge (about 40 packages with their plugins);" \
         "run with -L 'unit|mpi|python|gpu' to leave it out"
fi
mkdir -p "$OB_ROOT/build"
for preset in "${presets[@]}"; do
  build_dir=$(ob_build "$preset")
  run_label=$label
  # The sanitized build is for the CPU code's own tests: the Python and Slurm suites would only run it slower.
  [ "$preset" = asan ] && [ -z "$run_label" ] && run_label="unit|mpi"
  ob_log "ctest ($preset${run_label:+, label $run_label})"
  ctest_args=(--test-dir "$build_dir" --output-on-failure -j "$(nproc)")
  [ -n "$run_label" ] && ctest_args+=(-L "$run_label")
  # Open MPI's own allocations are not freed before exit: leak reports are off; every other report aborts a test.
  [ "$preset" = asan ] && export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  ctest "${ctest_args[@]}"
done

if [ "$(ob_gpu_count)" -eq 0 ] && { [ -z "$label" ] || [ "$label" = gpu ]; }; then
  skipped=$(ctest --test-dir "$OB_ROOT/build/${presets[0]}" -N -L gpu | sed -n 's/^Total Tests: //p')
  ob_log "${skipped:-0} GPU tests did not run (no GPU on this machine; CTest lists them as Skipped)"
fi
ob_log "all tests passed"
