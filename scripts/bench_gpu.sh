#!/usr/bin/env bash
# One call on a GPU machine: builds (CUDA architecture 90 unless CUDA_ARCH says otherwise), runs the GPU tests and
# the benchmarks, and writes every CSV, log and the report under one folder. Exits non-zero if any check fails.
#
# Usage: scripts/bench_gpu.sh [--out DIR] [--part PART]...
#   PART: test (ctest -L gpu, and -L mpi), phase1 (default size and 4096^3), phase3 (2 ranks on GPUs),
#         phase4 (one rank per GPU: the six configurations), phase4-sweeps (chunk and bucket sweeps on
#         4096,16,2048, comm-only bus bandwidth against a single all-reduce), phase4-knobs (nccl-max-ctas
#         sweeps with normal and high comm-stream priority on 4096,16,8192 and 4096,16,512), ddp (PyTorch DDP,
#         expert and default settings, on the six configurations). Default: all parts.
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
[ "${#parts[@]}" -gt 0 ] || parts=(test phase1 phase3 phase4 phase4-sweeps phase4-knobs ddp)
for p in "${parts[@]}"; do
  case "$p" in
    test|phase1|phase3|phase4|phase4-sweeps|phase4-knobs|ddp) ;;
    *) ob_die "--part: '$p' is invalid: test, phase1, phase3, phase4, phase4-sweeps, phase4-knobs or ddp" 2 ;;
  esac
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

mpi=(mpirun --bind-to none -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS)
p3="$build/phase3_mpi_cuda/phase3_mpi_cuda"
p4="$build/phase4_chunked_nccl/phase4_chunked_nccl"
# The six configurations of the phase 4 issue: hidden,layers,batch per rank.
configs=(4096,16,512 4096,16,2048 4096,16,8192 1024,32,256 1024,32,4096 2048,24,1024)

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
    phase3)
      run phase3-gpu "${mpi[@]}" -np 2 "$p3" --device gpu --check --batch 8192 --in 4096 --out 4096 --chunks 8 \
        --csv "$out/phase3-gpu.csv"
      ;;
    phase4)
      for c in "${configs[@]}"; do
        IFS=, read -r h l b <<<"$c"
        run "phase4-$h-$l-$b" "${mpi[@]}" -np "$gpus" "$p4" --check --hidden "$h" --layers "$l" --batch "$b" \
          --csv "$out/phase4-$h-$l-$b.csv"
      done
      ;;
    phase4-sweeps)
      run phase4-sweep-chunks "${mpi[@]}" -np "$gpus" "$p4" --hidden 4096 --layers 16 --batch 2048 \
        --sweep chunks=5,10,20,50 --csv "$out/phase4-sweep-chunks.csv"
      run phase4-sweep-bucket "${mpi[@]}" -np "$gpus" "$p4" --hidden 4096 --layers 16 --batch 2048 \
        --sweep bucket-mb=1,5,25,64,100,256 --csv "$out/phase4-sweep-bucket.csv"
      # Bus bandwidth of bucketed comm-only runs (64 MB - 1 GB buckets) against one all-reduce of the whole 1 GiB.
      run phase4-busbw-buckets "${mpi[@]}" -np "$gpus" "$p4" --mode comm --check --hidden 4096 --layers 16 \
        --batch 8 --sweep bucket-mb=64,256,1024 --csv "$out/phase4-busbw-buckets.csv"
      run phase4-busbw-single "${mpi[@]}" -np "$gpus" "$p4" --mode comm --check --hidden 4096 --layers 16 \
        --batch 8 --chunks 1 --csv "$out/phase4-busbw-single.csv"
      ;;
    phase4-knobs)
      for c in 4096,16,8192 4096,16,512; do
        IFS=, read -r h l b <<<"$c"
        for priority in normal high; do
          run "phase4-ctas-$h-$l-$b-$priority" "${mpi[@]}" -np "$gpus" "$p4" --hidden "$h" --layers "$l" --batch "$b" \
            --comm-priority "$priority" --sweep nccl-max-ctas=1,2,4,8,16,32 --csv "$out/phase4-ctas-$h-$l-$b-$priority.csv"
        done
      done
      ;;
    ddp)
      run ddp-expert python3 -m torch.distributed.run --nproc_per_node "$gpus" "$OB_ROOT/scripts/bench_ddp.py" \
        --configs "${configs[@]}" --csv "$out/ddp-expert.csv"
      run ddp-default python3 -m torch.distributed.run --nproc_per_node "$gpus" "$OB_ROOT/scripts/bench_ddp.py" \
        --default --configs "${configs[@]}" --csv "$out/ddp-default.csv"
      ;;
  esac
done
if compgen -G "$out/*.csv" >/dev/null; then  # a test-only run writes no CSV: nothing to report
  run report python3 "$OB_ROOT/scripts/report.py" "$out"
fi
[ "$status" -eq 0 ] && ob_log "all parts passed; results in $out" || ob_log "some parts FAILED; results in $out"
exit "$status"
