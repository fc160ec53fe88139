#!/usr/bin/env bash
# One call on a GPU machine: builds (CUDA architecture 90 unless CUDA_ARCH says otherwise), runs the GPU tests and
# the benchmarks, and writes every CSV, log and the report under one folder. Exits non-zero if any check fails.
#
# The steps are data: each part an experiment spec, experiments/bench/<part>.toml (what runs, on how many ranks, with
# which arguments and environment, over which values; experiments/bench.toml says how to write one), expanded by
# overlap_bench/compare/bench_parts.py; the resolved experiment, every command as it ran, is written to <out>/experiment.json.
#
# Usage: scripts/bench_gpu.sh [--out DIR] [--part PART]... [--config H,L,B]... [--dry-run] [--list]
#   --part PART  run this part (repeatable; default: every part, in experiments/bench.toml's order)
#   --list     print every part with its summary (e.g. headline: issue 49's comparison in one call; gate: phase 4 of
#              the build OB_GATE_BASE_BUILD names against this one)
#   --config H,L,B  run the steps that loop over the six configurations on this one only (repeatable): a part too
#              long for one call split over several
#   --out DIR  results folder (default results/runs/<host>-gpu-<date-time>)
#   --dry-run  print every step's name and command; build and run nothing
# Multi-GPU runs keep NVLink multicast off (the variables of overlap_bench/core/mpi_launch.py), as the lent machines
# require.
set -uo pipefail
source "$(dirname "$0")/lib/common.sh"
multicast_off=$(python3 -m overlap_bench.core.mpi_launch) || ob_die "the multicast variables could not be read" 3
while IFS= read -r setting; do export "${setting?}"; done <<<"$multicast_off"

out="" dry=0 selection=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --part|--config) selection+=("$1" "${2:-}"); shift; [ $# -gt 0 ] && shift ;;
    --dry-run) dry=1; shift ;;
    --list) exec python3 -m overlap_bench.compare.bench_parts --list ;;
    -h|--help) ob_usage "$0"; exit 0 ;;
    *) ob_die "unknown option '$1' (see --help)" 2 ;;
  esac
done
[ -n "$out" ] || out="$OB_ROOT/results/runs/$(hostname -s)-gpu-$(date +%Y%m%d-%H%M%S)"
build="$OB_ROOT/build/gpu"
if [ "$dry" = 1 ]; then gpus=${GPUS:-2}; else gpus=$(ob_gpu_count); fi
status=0
# The steps, checked and expanded before any work (a bad part, configuration or spec: exit 2, nothing written); the
# resolved experiment is the results folder's first file.
# Each step an argument list (NUL-terminated: name, count, arguments): no shell ever parses a command or a path.
expand=(python3 -m overlap_bench.compare.bench_parts "${selection[@]}" --gpus "$gpus" --build "$build" --out "$out"
        --argv)
[ "$dry" = 1 ] || expand+=(--resolved "$out/experiment.json")
steps=$(mktemp)
trap 'rm -f "$steps"' EXIT
"${expand[@]}" >"$steps" || exit $?
if [ "$dry" = 0 ]; then
  ob_log "configuring and building in $build ($gpus GPU(s))"
  {
    (cd "$OB_ROOT" && cmake --preset gpu -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}") &&
      cmake --build "$build" -j "$(nproc)"
  } >"$out/build.log" 2>&1 || { tail -n 40 "$out/build.log"; ob_die "build failed (log: $out/build.log)" 3; }
  nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
fi

# run NAME COMMAND...: runs a step, keeps its log, records a failure without stopping the others.
run() {
  local name=$1; shift
  if [ "$dry" = 1 ]; then  # each argument one word as a shell would read it back (quoted where it must be)
    local word line=""
    for word in "$@"; do [[ $word =~ ^[A-Za-z0-9_./=:,@%+-]+$ ]] && line+=" $word" || line+=" ${word@Q}"; done
    echo "$name:$line"; return
  fi
  ob_log "$name"
  if "$@" >"$out/$name.log" 2>&1; then
    grep -E '^(#|  )' "$out/$name.log" | grep -v '^# \(summary\|timeline\)' | head -n 40 || true
  else
    local rc=$?
    status=1
    ob_log "FAILED ($rc): $name; last lines of $out/$name.log:"
    tail -n 25 "$out/$name.log"
  fi
}

while IFS= read -r -d '' -u 3 name && IFS= read -r -d '' -u 3 count; do  # descriptor 3: a step may read stdin
  argv=()
  for ((i = 0; i < count; i++)); do IFS= read -r -d '' -u 3 word && argv+=("$word"); done
  run "$name" "${argv[@]}"
done 3<"$steps"
if [ "$dry" = 1 ] || compgen -G "$out/*.csv" >/dev/null; then  # a test-only run writes no CSV: nothing to report
  run report python3 -m overlap_bench.report.report "$out"
fi
[ "$dry" = 1 ] && exit 0
if [ "$status" -eq 0 ]; then ob_log "all parts passed; results in $out"; else ob_log "some parts FAILED; results in $out"; fi
exit "$status"
