#!/usr/bin/env bash
# One call on a GPU machine: builds (CUDA architecture 90 unless CUDA_ARCH says otherwise), runs the GPU tests and
# the benchmarks, and writes every CSV, log and the report under one folder. Exits non-zero if any check fails.
#
# Usage: scripts/bench_gpu.sh [--out DIR] [--part PART]...
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
#         memcheck and racecheck on phase 1's kernels and on phase 4 with one rank). Default: all parts.
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
    -h|--help) ob_usage "$0"; exit 0 ;;
    *) ob_die "unknown option '$1' (see --help)" 2 ;;
  esac
done
all_parts=(test phase1 phase3 phase4 phase4-sweeps phase4-knobs phase4-bf16 phase4-policy phase4-more phase4-sync
           phase4-sync-buckets phase4-sync-comm phase4-sm-margin phase4-sharded planner interference phase3-osu nvtx ddp
           sanitize)
[ "${#parts[@]}" -gt 0 ] || parts=("${all_parts[@]}")
for p in "${parts[@]}"; do
  case " ${all_parts[*]} " in
    *" $p "*) ;;
    *) ob_die "--part: '$p' is invalid: one of ${all_parts[*]}" 2 ;;
  esac
done
[ -n "$out" ] || out="$OB_ROOT/results/runs/$(hostname -s)-gpu-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
build="$OB_ROOT/build/gpu"
gpus=$(ob_gpu_count)
status=0

ob_log "configuring and building in $build ($gpus GPU(s))"
{
  (cd "$OB_ROOT" && cmake --preset gpu -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}") &&
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
      # Compute sized to the all-reduce, with Open MPI's ring MPI_Iallreduce (its default is 2x slower here).
      run phase3-gpu-auto "${mpi[@]}" -x OMPI_MCA_coll_libnbc_iallreduce_algorithm=1 -np 2 "$p3" --device gpu --check \
        --batch auto --in 4096 --out 4096 --chunks 8 --csv "$out/phase3-gpu-auto.csv"
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
    phase4-bf16)
      # bf16 against fp32 communication: comm-only time and bus bandwidth over bucket sizes (the casts are compute).
      for dtype in fp32 bf16; do
        run "phase4-comm-$dtype" "${mpi[@]}" -np "$gpus" "$p4" --mode comm --check --hidden 4096 --layers 16 \
          --batch 8 --comm-dtype "$dtype" --sweep bucket-mb=25,64,256,1024 --csv "$out/phase4-comm-$dtype.csv"
      done
      for c in 4096,16,8192 4096,16,512; do
        IFS=, read -r h l b <<<"$c"
        shape=(--hidden "$h" --layers "$l" --batch "$b")
        run "phase4-bf16-$h-$l-$b" "${mpi[@]}" -np "$gpus" "$p4" "${shape[@]}" --check --comm-dtype bf16 \
          --csv "$out/phase4-bf16-$h-$l-$b.csv"
        run "phase4-bf16-ctas-$h-$l-$b" "${mpi[@]}" -np "$gpus" "$p4" "${shape[@]}" --comm-dtype bf16 \
          --comm-priority high --sweep nccl-max-ctas=1,2,4,6,8,12,16 --csv "$out/phase4-bf16-ctas-$h-$l-$b.csv"
      done
      ;;
    phase4-policy)
      for c in 4096,16,8192 4096,16,512; do
        IFS=, read -r h l b <<<"$c"
        for dtype in fp32 bf16; do
          for policy in efficiency zero; do
            run "phase4-policy-$policy-$dtype-$h-$l-$b" "${mpi[@]}" -np "$gpus" "$p4" --hidden "$h" --layers "$l" \
              --batch "$b" --check --comm-dtype "$dtype" --nccl-cta-policy "$policy" \
              --csv "$out/phase4-policy-$policy-$dtype-$h-$l-$b.csv"
          done
        done
      done
      ;;
    phase4-more)
      for c in 4096,16,8192 4096,16,512; do
        IFS=, read -r h l b <<<"$c"
        shape=(--hidden "$h" --layers "$l" --batch "$b")
        # Energy per iteration of each mode, and the power timeline (with the Gantt timeline beside it).
        iters=$([ "$b" -ge 4096 ] && echo 40 || echo 200)  # each mode's timed iterations last 0.5 s or more
        run "phase4-power-$h-$l-$b" "${mpi[@]}" -np "$gpus" "$p4" "${shape[@]}" --power --iters "$iters" \
          --csv "$out/phase4-power-$h-$l-$b.csv"
        run "phase4-graph-$h-$l-$b" "${mpi[@]}" -np "$gpus" "$p4" "${shape[@]}" --check --graph \
          --csv "$out/phase4-graph-$h-$l-$b.csv"
      done
      run phase4-accum "${mpi[@]}" -np "$gpus" "$p4" --hidden 4096 --layers 16 --batch 512 --check \
        --sweep accum-steps=1,2,4,8 --csv "$out/phase4-accum.csv"
      run phase4-graph-small "${mpi[@]}" -np "$gpus" "$p4" --hidden 1024 --layers 32 --batch 256 --check --graph \
        --csv "$out/phase4-graph-1024-32-256.csv"
      ;;
    phase4-sync)
      for c in "${configs[@]}"; do
        IFS=, read -r h l b <<<"$c"
        for sync in nccl nccl-sym ce; do  # one run each: each keeps its timeline
          run "phase4-sync-$sync-$h-$l-$b" "${mpi[@]}" -np "$gpus" "$p4" --check --hidden "$h" --layers "$l" \
            --batch "$b" --sync "$sync" --csv "$out/phase4-sync-$sync-$h-$l-$b.csv"
        done
      done
      ;;
    phase4-sync-buckets)
      for c in 4096,16,512 2048,24,1024; do
        IFS=, read -r h l b <<<"$c"
        for sync in nccl nccl-sym ce; do
          run "phase4-sync-buckets-$sync-$h-$l-$b" "${mpi[@]}" -np "$gpus" "$p4" --hidden "$h" --layers "$l" \
            --batch "$b" --sync "$sync" --sweep bucket-mb=25,64,128,256 --csv "$out/phase4-sync-buckets-$sync-$h-$l-$b.csv"
        done
      done
      ;;
    phase4-sync-comm)
      for sync in nccl nccl-sym ce; do
        run "phase4-sync-comm-$sync" "${mpi[@]}" -np "$gpus" "$p4" --mode comm --check --hidden 4096 --layers 16 \
          --batch 8 --sync "$sync" --sweep bucket-mb=1,4,16,64,256,1024 --csv "$out/phase4-sync-comm-$sync.csv"
      done
      # NCCL's own account of the path each strategy takes (symmetric kernels, copy engines), from a small run.
      for sync in nccl-sym ce; do
        run "phase4-sync-nccl-log-$sync" "${mpi[@]}" -np "$gpus" -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,COLL,REG \
          "$p4" --mode comm --hidden 1024 --layers 4 --batch 8 --bucket-mb 4 --iters 2 --warmup 1 --sync "$sync" \
          --csv "$out/phase4-sync-nccl-log-$sync.csv"
      done
      ;;
    phase4-sm-margin)
      for c in 4096,16,8192 4096,16,512; do
        IFS=, read -r h l b <<<"$c"
        for ctas in 0 8; do
          run "phase4-sm-margin-$h-$l-$b-ctas$ctas" "${mpi[@]}" -np "$gpus" "$p4" --hidden "$h" --layers "$l" \
            --batch "$b" $([ "$ctas" -gt 0 ] && echo --nccl-max-ctas "$ctas") --sweep gemm-sm-margin=0,8,16,32 \
            --csv "$out/phase4-sm-margin-$h-$l-$b-ctas$ctas.csv"
        done
      done
      ;;
    sanitize)
      sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
      p1="$build/phase1_cuda_baseline/phase1_cuda_baseline"
      for tool in memcheck racecheck; do
        run "sanitize-$tool-phase1" "$sanitizer" --tool "$tool" --error-exitcode 9 "$p1" --check --kernel all \
          --batch 96 --in 80 --out 72 --iters 2 --warmup 1 --csv "$out/sanitize-$tool-phase1.csv"
        for extra in "" "--graph --comm-dtype bf16 --accum-steps 2"; do
          name="sanitize-$tool-phase4${extra:+-knobs}"
          # shellcheck disable=SC2086  # $extra is a list of options
          # NCCL's set-up probes kernels it has no image for (cudaFuncGetAttributes fails by design, inside
          # libnccl): API errors are not reported for phase 4; every CUDA call of ours is checked anyway.
          run "$name" "$sanitizer" --tool "$tool" --report-api-errors no --error-exitcode 9 "$p4" --check \
            --hidden 192 --layers 4 --batch 64 --bucket-mb 0.1 --first-bucket-mb 0.01 --iters 2 --warmup 1 $extra \
            --csv "$out/$name.csv"
        done
      done
      grep -H "ERROR SUMMARY\|RACECHECK SUMMARY" "$out"/sanitize-*.log >"$out/sanitize-summary.txt" || true
      ;;
    phase4-sharded)
      for c in "${configs[@]}"; do
        IFS=, read -r h l b <<<"$c"
        for sync in sharded sharded-ce; do
          run "phase4-sharded-$sync-$h-$l-$b" "${mpi[@]}" -np "$gpus" "$p4" --check --hidden "$h" --layers "$l" \
            --batch "$b" --sync "$sync" --csv "$out/phase4-sharded-$sync-$h-$l-$b.csv"
        done
      done
      for sync in sharded sharded-ce; do
        run "phase4-sharded-buckets-$sync" "${mpi[@]}" -np "$gpus" "$p4" --hidden 4096 --layers 16 --batch 512 \
          --sync "$sync" --sweep bucket-mb=25,64,128,256 --csv "$out/phase4-sharded-buckets-$sync.csv"
        run "phase4-sharded-prefetch-$sync" "${mpi[@]}" -np "$gpus" "$p4" --hidden 4096 --layers 16 --batch 512 \
          --sync "$sync" --sweep prefetch=0,1,2,4 --csv "$out/phase4-sharded-prefetch-$sync.csv"
      done
      ;;
    planner)
      for c in "${configs[@]}"; do
        IFS=, read -r h l b <<<"$c"
        run "planner-$h-$l-$b" "${mpi[@]}" -np "$gpus" "$p4" --hidden "$h" --layers "$l" --batch "$b" --iters 15 \
          --warmup 3 --calibrate --plan-syncs nccl,nccl-sym,ce --sweep plan=auto,layer,1,5,25,64,128,256,1024 \
          --csv "$out/planner-$h-$l-$b.csv"
      done
      run planner-what-if python3 "$OB_ROOT/scripts/predict.py" "$out/planner-4096-16-512.calibration.json" \
        --predictor "$build/phase4_chunked_nccl/phase4_predict" --csv "$out/what-if-4096-16-512.csv" \
        -o "$out/what-if-4096-16-512.png"
      cap=$(sed -n 's/.*bucket_cap_mb: \([0-9.]*\).*/\1/p' "$out/planner-what-if.log")
      run planner-ddp python3 -m torch.distributed.run --nproc_per_node "$gpus" "$OB_ROOT/scripts/bench_ddp.py" \
        --configs 4096,16,512 --bucket-mb 25 "${cap:-25}" --csv "$out/planner-ddp.csv"
      if [ "$gpus" -gt 2 ]; then  # these steps against what the published 2-GPU calibrations predict for them
        measured=()
        for c in "${configs[@]}"; do measured+=("$out/planner-${c//,/-}.csv"); done
        run planner-check-2gpu python3 "$OB_ROOT/scripts/check_prediction.py" \
          --calibrations "$OB_ROOT"/results/2xH200/planner/planner-*.calibration.json \
          --predictor "$build/phase4_chunked_nccl/phase4_predict" --measured "${measured[@]}" \
          --csv "$out/planner-check-2gpu.csv"
      fi
      ;;
    interference)
      for c in 4096,16,512 2048,24,1024; do
        IFS=, read -r h l b <<<"$c"
        run "interference-sync-$h-$l-$b" "${mpi[@]}" -np "$gpus" "$p4" --mode interference --hidden "$h" \
          --layers "$l" --batch "$b" --iters 3 --sweep sync=nccl,nccl-sym,ce --csv "$out/interference-sync-$h-$l-$b.csv"
        run "interference-ctas-$h-$l-$b" "${mpi[@]}" -np "$gpus" "$p4" --mode interference --hidden "$h" \
          --layers "$l" --batch "$b" --iters 3 --sweep nccl-max-ctas=1,2,4,8,16,32 \
          --csv "$out/interference-ctas-$h-$l-$b.csv"
      done
      ;;
    phase3-osu)  # 2 ranks of 8 cores each; --threads 7: 6 compute threads, a spare core for the progress thread
      spare=(mpirun --map-by slot:PE=8 --bind-to core -x OMPI_MCA_coll_libnbc_iallreduce_algorithm=1 -np 2 "$p3")
      run phase3-busy-spare-ring "${spare[@]}" --compute busy --threads 2 --grad-mb 1,4,16 --chunks 16 --iters 30 \
        --check --csv "$out/phase3-busy-spare-ring.csv"
      run phase3-cpu-spare-gemm-ring "${spare[@]}" --device cpu --threads 7 --batch auto --in 1024 --grad-mb 4,16 \
        --chunks 16 --iters 20 --check --csv "$out/phase3-cpu-spare-gemm-ring.csv"
      ;;
    nvtx)  # what Nsight shows: phase 4's NVTX ranges (per mode, layer, bucket) on 2 GPUs
      capture=(--hidden 4096 --layers 16 --batch 512 --iters 3 --warmup 1 --mode overlap)
      if command -v nsys >/dev/null; then
        run nvtx-nsys nsys profile --trace cuda,nvtx --force-overwrite true -o "$out/nvtx-phase4" \
          "${mpi[@]}" -np "$gpus" "$p4" "${capture[@]}" --csv "$out/nvtx-phase4.csv"
        run nvtx-ranges nsys stats --report nvtx_sum --format csv --output "$out/nvtx-ranges" "$out/nvtx-phase4.nsys-rep"
      else  # one rank: ncu serialises kernels; each kernel printed with the NVTX ranges it ran in
        run nvtx-ncu ncu --nvtx --launch-count 60 --metrics gpu__time_duration.sum "$p4" "${capture[@]}" \
          --csv "$out/nvtx-phase4.csv"
      fi
      ;;
    ddp)
      ddp=(python3 -m torch.distributed.run --nproc_per_node "$gpus" "$OB_ROOT/scripts/bench_ddp.py")
      run ddp-expert "${ddp[@]}" --bucket-mb 25 64 128 256 --configs "${configs[@]}" --csv "$out/ddp-expert.csv"
      run ddp-default "${ddp[@]}" --default --configs "${configs[@]}" --csv "$out/ddp-default.csv"
      run ddp-fsdp2 "${ddp[@]}" --fsdp --configs "${configs[@]}" --csv "$out/ddp-fsdp2.csv"
      ;;
  esac
done
if compgen -G "$out/*.csv" >/dev/null; then  # a test-only run writes no CSV: nothing to report
  run report python3 "$OB_ROOT/scripts/report.py" "$out"
fi
[ "$status" -eq 0 ] && ob_log "all parts passed; results in $out" || ob_log "some parts FAILED; results in $out"
exit "$status"
