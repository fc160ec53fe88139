#!/usr/bin/env bash
# One call on a GPU machine: builds (CUDA architecture 90 unless CUDA_ARCH says otherwise), runs the GPU tests and
# the benchmarks, and writes every CSV, log and the report under one folder. Exits non-zero if any check fails.
#
# The steps are a table, scripts/bench_gpu.parts (part, name, loops, command); this script expands and runs them.
#
# Usage: scripts/bench_gpu.sh [--out DIR] [--part PART]... [--config H,L,B]... [--dry-run]
#   PART: test (ctest -L gpu, and -L mpi), phase1 (default size and 4096^3), phase3 (2 ranks on GPUs: round 1's
#         size, and --batch auto with the ring MPI_Iallreduce),
#         phase4 (one rank per GPU: the six configurations), phase4-sweeps (chunk and bucket sweeps on
#         4096,16,2048, comm-only bus bandwidth against a single all-reduce), phase4-knobs (nccl-max-ctas
#         sweeps with normal and high comm-stream priority on 4096,16,8192 and 4096,16,512), phase4-bf16
#         (bf16 against fp32 communication, alone and in the step, with fewer CTAs), phase4-policy (NCCL's
#         efficiency and zero CTA policies, fp32 and bf16, on 4096,16,8192 and 4096,16,512), phase4-more (energy with
#         --power, --accum-steps, --graph), phase4-sync (every --sync strategy on the six configurations, with
#         --check), phase4-sync-buckets (every strategy over 25-256 MB buckets on 4096,16,512 and 2048,24,1024),
#         phase4-sync-comm (each strategy's comm-only bus bandwidth over bucket sizes, and NCCL's own log
#         of which path ran), phase4-sm-margin (--gemm-sm-margin with and without a CTA cap), phase4-sharded
#         (sharded and sharded-ce on the six configurations with --check, and over bucket sizes and prefetch
#         depths on 4096,16,512), planner (on the six configurations: --calibrate, --plan auto against eight
#         fixed plans with predicted_ms, the what-if of 4096,16,512 and DDP at its recommended cap; on more than 2
#         GPUs also every step against the published 2 x H200 calibrations' prediction), interference
#         (the interference map of 4096,16,512 and 2048,24,1024: every all-reduce strategy, and nccl over CTA caps,
#         1 MiB to the gradient), phase3-osu (phase 3 on the host's spare cores, 8 per rank, ring MPI_Iallreduce:
#         busy and real compute, every strategy), nvtx (an Nsight Systems capture of phase 4 on 2 GPUs, or ncu's
#         NVTX ranges per kernel where nsys is missing, with the range list), ddp (PyTorch DDP, expert over four bucket caps and default settings, and FSDP2,
#         on the six configurations), sanitize (compute-sanitizer
#         memcheck and racecheck on phase 1's kernels and on phase 4 with one rank), headline (issue 49's comparison in one call: the
#         six configurations, every strategy and the planner's plan against DDP at four caps and FSDP2, one process
#         per system a round: overlap_bench/headline.py), gate (phase 4 of the build OB_GATE_BASE_BUILD names against
#         this one, per configuration and strategy: overlap_bench/gate.py), transports (NVLink, host memory and sockets:
#         comm-only bus bandwidth beside nccl-tests, the six configurations, the planner's slow-link predictions
#         against them; after planner). Default: all parts.
#   --config H,L,B  run the steps that loop over the six configurations on this one only (repeatable): a part too
#              long for one call split over several
#   --out DIR  results folder (default results/runs/<host>-gpu-<date-time>)
#   --dry-run  print every step's name and command; build and run nothing
# Multi-GPU runs keep NVLink multicast off (NCCL_NVLS_ENABLE=0 and friends), as the lent machines require.
set -uo pipefail
source "$(dirname "$0")/lib/common.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
table="$OB_ROOT/scripts/bench_gpu.parts"

out="" parts=() dry=0
configs=(4096,16,512 4096,16,2048 4096,16,8192 1024,32,256 1024,32,4096 2048,24,1024)
chosen=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --config)
      [[ "${2:-}" =~ ^[1-9][0-9]*,[1-9][0-9]*,[1-9][0-9]*$ ]] ||
        ob_die "--config: '${2:-}' is invalid: H,L,B as positive whole numbers (e.g. 4096,16,512)" 2
      chosen+=("$2"); shift 2 ;;
    --part) parts+=("${2:?--part needs a name}"); shift 2 ;;
    --dry-run) dry=1; shift ;;
    -h|--help) ob_usage "$0"; exit 0 ;;
    *) ob_die "unknown option '$1' (see --help)" 2 ;;
  esac
done
mapfile -t all_parts < <(sed -n 's/^\([a-z0-9-]*\) | .*/\1/p' "$table" | awk '!seen[$0]++')
[ "${#parts[@]}" -gt 0 ] || parts=("${all_parts[@]}")
for p in "${parts[@]}"; do
  case " ${all_parts[*]} " in
    *" $p "*) ;;
    *) ob_die "--part: '$p' is invalid: one of ${all_parts[*]}" 2 ;;
  esac
done
[ "${#chosen[@]}" -eq 0 ] || configs=("${chosen[@]}")
[ -n "$out" ] || out="$OB_ROOT/results/runs/$(hostname -s)-gpu-$(date +%Y%m%d-%H%M%S)"
build="$OB_ROOT/build/gpu"
gpus=$( [ "$dry" = 1 ] && echo "${GPUS:-2}" || ob_gpu_count)
status=0
if [ "$dry" = 0 ]; then
  mkdir -p "$out"
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
  if [ "$dry" = 1 ]; then echo "$name: $*"; return; fi
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

# The values a table's command names besides its loops'.
declare -A value=(
  [build]=$build [root]=$OB_ROOT [out]=$out [gpus]=$gpus [configs]="${configs[*]}"
  [mpi]="mpirun --bind-to none -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS"
  [p1]=$build/phase1_cuda_baseline/phase1_cuda_baseline [p3]=$build/phase3_mpi_cuda/phase3_mpi_cuda
  [p4]=$build/phase4_chunked_nccl/phase4_chunked_nccl
  [sanitizer]=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
)

# step NAME COMMAND LOOP...: the step once per value of the first loop (and of the rest within it), then run.
step() {
  local name=$1 command=$2; shift 2
  if [ $# -eq 0 ]; then
    local key
    for key in "${!value[@]}"; do command=${command//\{$key\}/${value[$key]}}; done
    eval "run \"\$name\" $command"
    return
  fi
  local loop=$1; shift
  case "$loop" in
    -) step "$name" "$command" "$@"; return ;;
    "gpus>2") [ "$gpus" -gt 2 ] && step "$name" "$command" "$@"; return ;;
    has:*) command -v "${loop#has:}" >/dev/null && step "$name" "$command" "$@"; return ;;
    "!has:"*) command -v "${loop#!has:}" >/dev/null || step "$name" "$command" "$@"; return ;;
  esac
  local var=${loop%%=*} values=${loop#*=} v
  [ "$values" = @configs ] && values=$(IFS=/; echo "${configs[*]}")
  local list
  IFS=/ read -r -a list <<<"$values"
  for v in "${list[@]}"; do
    local n=${name//\{$var\}/$v} c=${command//\{$var\}/$v}
    if [ "$var" = c ]; then
      local h l b
      IFS=, read -r h l b <<<"$v"
      n=${n//\{h\}/$h} n=${n//\{l\}/$l} n=${n//\{b\}/$b}
      c=${c//\{h\}/$h} c=${c//\{l\}/$l} c=${c//\{b\}/$b}
    fi
    step "$n" "$c" "$@"
  done
}

for part in "${parts[@]}"; do
  while IFS= read -r line; do
    [[ "$line" == "$part | "* ]] || continue
    rest=${line#"$part | "}
    name=${rest%% | *}; rest=${rest#* | }
    loops=${rest%% | *}; command=${rest#* | }
    # shellcheck disable=SC2086  # the loops are words
    step "$name" "$command" $loops
  done <"$table"
done
if [ "$dry" = 1 ] || compgen -G "$out/*.csv" >/dev/null; then  # a test-only run writes no CSV: nothing to report
  run report python3 -m overlap_bench.report "$out"
fi
[ "$dry" = 1 ] && exit 0
[ "$status" -eq 0 ] && ob_log "all parts passed; results in $out" || ob_log "some parts FAILED; results in $out"
exit "$status"
