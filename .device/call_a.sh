#!/bin/bash
# Device call A (4 GPUs), at the commit of --passes everywhere (phase 4's calibration, bench_ddp.py) and the loop plan
# made once (ob::loop_plan): every phase's GPU tests, phase 4's calibration and bench_ddp.py in passes, the
# before/after gate 13f2258 -> this commit, then 2-GPU calibrations in 3 passes of the six configurations (two pairs
# of GPUs side by side), 4-GPU comm-only sweeps of nccl and ce, and the headline's predictions for 4 ranks from them,
# written before the run that tests them (call B).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 GTEST_COLOR=no
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 PYTHONUNBUFFERED=1
source .gpu_commit_env; export PYTHONPATH=$PWD
B=$PWD/.gpu/default; P4=$B/phase4_chunked_nccl/phase4_chunked_nccl; export PATH=$B/phase4_chunked_nccl:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
GPUS=$(nvidia-smi -L | grep -c '^GPU ')
L=$OUT/a; mkdir -p $L/tests
finish() { cd $OUT && find a -name '*.timeline.*' -delete; find a -name '*.trace.json' -delete; tar czf a.tgz a && rm -rf a; ls -la $OUT; }
trap finish EXIT
{ pwd; nvidia-smi; nvidia-smi topo -m; } > $L/machine.txt 2>&1; $P4 --version > $L/version.txt
echo "GPUs $GPUS: $(nvidia-smi -L | head -1); $(head -1 $L/version.txt)"
M="mpirun -n"; F="--oversubscribe --bind-to none -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS"
pass=0; fail=0
t() { local name=$1; shift; if timeout 150 "$@" > $L/tests/$name.log 2>&1; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; tail -5 $L/tests/$name.log; fi; }
t phase1_gpu env CUDA_VISIBLE_DEVICES=0 $B/tests/phase1/phase1_gpu_tests
t common_cuda env CUDA_VISIBLE_DEVICES=0 $B/tests/common_cuda_tests
t phase4_gpu_np1 env CUDA_VISIBLE_DEVICES=0 $M 1 $F $B/tests/phase4/phase4_gpu_tests
t phase4_gpu_np2 $M 2 $F $B/tests/phase4/phase4_gpu_tests
t phase4_rooms_gpu_np2 $M 2 $F $B/tests/phase4/phase4_rooms_gpu_tests
t phase3_gpu_np2 $M 2 $F $B/phase3_mpi_cuda/phase3_mpi_cuda --device gpu --check --batch 301 --in 67 --out 45 --chunks 6 --iters 5 --warmup 1 --min-time-ms 50 --csv $L/tests/phase3_gpu_np2.csv
t phase1_min_time env CUDA_VISIBLE_DEVICES=0 $B/phase1_cuda_baseline/phase1_cuda_baseline --iters 3 --min-time-ms 200 --check --csv $L/tests/phase1_min_time.csv
t phase4_calibrate_passes $M 2 $F $P4 --hidden 1024 --layers 4 --batch 128 --calibrate --plan-syncs nccl,sharded-ce --mode compute --iters 3 --passes 3 --csv $L/tests/calibrate_passes.csv
t bench_ddp_passes python3 -m torch.distributed.run --nproc_per_node 2 -m overlap_bench.bench_ddp --configs 1024,4,128 --iters 6 --passes 3 --bucket-mb 4 25 --csv $L/tests/bench_ddp_passes.csv
echo "gpu tests: $pass passed, $fail failed at $(el) s" | tee $L/tests.log
grep -h "PASSED\|FAILED" $L/tests/*.log | tee -a $L/tests.log
grep -h "calibration:" $L/tests/phase4_calibrate_passes.log | head -3
python3 -m overlap_bench.gate --base-build $PWD/.gpu/base --build $B --gpus $GPUS --rounds 3 --iters 15 --configs 4096x16x512,2048x24x1024,1024x32x4096,4096x16x2048 \
  --deadline 240 --seed 107 --out $L/gate > $L/gate.log 2>&1
echo "gate rc $? at $(el) s"; tail -1 $L/gate.log
MPI="mpirun --bind-to none -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS"
C2=$L/cal2; mkdir -p $C2
cal2() { local devs=$1; shift; for cfg in "$@"; do IFS=x read h l b <<< "$cfg"
  timeout 150 $MPI -x CUDA_VISIBLE_DEVICES=$devs -np 2 $P4 --hidden $h --layers $l --batch $b --calibrate \
    --plan-syncs nccl,ce,sharded-ce --mode compute --iters 3 --passes 3 --csv $C2/$cfg.csv > $C2/$cfg.log 2>&1
  echo "2-GPU calibration $cfg on $devs rc $? at $(el) s"; done; }
cal2 0,1 4096x16x8192 1024x32x256 &
cal2 2,3 4096x16x512 4096x16x2048 1024x32x4096 2048x24x1024 &
wait
C4=$L/comm4; mkdir -p $C4
for s in nccl ce; do
  timeout 90 $MPI -np $GPUS $P4 --mode comm --check --hidden 4096 --layers 16 --batch 8 --sync $s \
    --sweep bucket-mb=1,4,16,64,256,1024 --iters 10 --csv $C4/comm-$s.csv > $C4/comm-$s.log 2>&1
  echo "4-GPU comm-only sweep $s rc $? at $(el) s"
done
python3 -m overlap_bench.headline --predict-from $C2 --gpus $GPUS --out $L/pred-scaled > $L/pred-scaled.log 2>&1
echo "predictions (scaled) rc $? at $(el) s"; tail -1 $L/pred-scaled.log
python3 -m overlap_bench.headline --predict-from $C2 --gpus $GPUS --comm-from $C4/comm-nccl.csv $C4/comm-ce.csv \
  --out $L/pred-measured > $L/pred-measured.log 2>&1
echo "predictions (4-GPU bucket times) rc $? at $(el) s"; tail -1 $L/pred-measured.log
