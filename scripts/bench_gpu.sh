#!/usr/bin/env bash
# One call on a GPU machine: builds (CUDA architecture 90 unless CUDA_ARCH says otherwise), runs the GPU tests and
# the benchmarks, and writes every CSV, log and the report under one folder. Exits non-zero if any check fails.
#
# Usage: scripts/bench_gpu.sh [--out DIR] [--part PART]...
#   PART: test (ctest -L gpu, and -L mpi), phase1 (default size and 4096^3). Default: all parts.
#   --out DIR  results folder (default results/runs/<host>-gpu-<date-time>)
# Multi-GPU runs keep NVLink multicast off (NCCL_NVLS_ENABLE=0 and friends), as the lent machines require.
set -uo pipefail
source "$(dirname "$0")/lib/common.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

out="" parts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --part) parts+=("${2:?--part needs a name}"); shift 2 ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) ob_die "unknown option '$1' (see --help)" 2 ;;
  esac
done
[ "${#parts[@]}" -gt 0 ] || parts=(test phase1)
for p in "${parts[@]}"; do
  case "$p" in test|phase1) ;; *) ob_die "--part: '$p' is invalid: test or phase1" 2 ;; esac
done
[ -n "$out" ] || out="$OB_ROOT/results/runs/$(hostname -s)-gpu-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
build="$OB_ROOT/build/gpu"
gpus=$(ob_gpu_count)
status=0

ob_log "configuring and building in $build ($gpus GPU(s))"
{
  cmake -S "$OB_ROOT" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" &&
    cmake --build "$build" -j "$(nproc)"
} >"$out/build.log" 2>&1 || { tail -n 40 "$out/build.log"; ob_die "build failed (log: $out/build.log)" 3; }
nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true

# run NAME COMMAND...: runs a step, keeps its log, records a failure without stopping the others.
run() {
  local name=$1; shift
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

for part in "${parts[@]}"; do
  case "$part" in
    test)
      run ctest-gpu ctest --test-dir "$build" -L gpu --output-on-failure
      run ctest-mpi ctest --test-dir "$build" -L mpi --output-on-failure
      ;;
    phase1)
      p1="$build/phase1_cuda_baseline/phase1_cuda_baseline"
      run phase1-default "$p1" --check --iters 50 --warmup 5 --csv "$out/phase1-default.csv"
      run phase1-4096 "$p1" --check --batch 4096 --in 4096 --out 4096 --iters 20 --warmup 3 --csv "$out/phase1-4096.csv"
      run phase1-4096-tf32 "$p1" --check --kernel cublas --tf32 --batch 4096 --in 4096 --out 4096 --iters 20 \
        --csv "$out/phase1-4096-tf32.csv"
      ;;
  esac
done
[ "$status" -eq 0 ] && ob_log "all parts passed; results in $out" || ob_log "some parts FAILED; results in $out"
exit "$status"
