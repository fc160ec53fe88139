#!/bin/bash
# Device call C (4 GPUs), at 739b677 (the planner corrected by its calibrated plans' steps; phase4_predict --comm):
#  1. 2-GPU calibrations of the six configurations (nccl, ce, sharded-ce), two pairs of GPUs side by side.
#  2. all 4 GPUs: comm-only sweeps over bucket sizes of nccl and ce (--check: the 4-rank strategy check too).
#  3. predictions for 4 ranks from the 2-GPU calibrations: the bucket times scaled, and measured on the 4 GPUs
#     (--comm-from), written before the runs that test them.
#  4. ob-headline --experiment experiments/planner.toml --configs $CONFIGS on 4 GPUs (its own calibration, 3 rounds),
#     with both predictions set beside the measured steps.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 PYTHONUNBUFFERED=1
source .gpu_commit_env
export PYTHONPATH=$PWD
B=$PWD/.gpu/default; export PATH=$B/phase4_chunked_nccl:$PATH
P4=$B/phase4_chunked_nccl/phase4_chunked_nccl
NAME=${NAME:-c}; CONFIGS=${CONFIGS:?}; BUDGET=${BUDGET:-570}
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
L=$OUT/$NAME; mkdir -p $L
finish() { cd $OUT && find $NAME -name '*.timeline.*' -delete; find $NAME -name '*.trace.json' -delete
  tar czf $NAME.tgz $NAME && rm -rf $NAME; ls -la $OUT; }
trap finish EXIT
{ nvidia-smi -L; nvidia-smi topo -m; } > $L/machine.txt 2>&1; $P4 --version | tee $L/version.txt; head -1 $L/machine.txt
GPUS=$(nvidia-smi -L | grep -c '^GPU ')
MPI="mpirun --bind-to none -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS"
C2=$L/cal2; mkdir -p $C2
cal2() { local devs=$1; shift; for cfg in "$@"; do IFS=x read h l b <<< "$cfg"
  timeout 120 $MPI -x CUDA_VISIBLE_DEVICES=$devs -np 2 $P4 --hidden $h --layers $l --batch $b --calibrate \
    --plan-syncs nccl,ce,sharded-ce --mode compute --iters 3 --csv $C2/$cfg.csv > $C2/$cfg.log 2>&1
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
python3 -m overlap_bench.headline --experiment experiments/planner.toml --predict-from $C2 --gpus $GPUS \
  --out $L/pred-scaled > $L/pred-scaled.log 2>&1; echo "predictions (scaled) rc $? at $(el) s"; tail -1 $L/pred-scaled.log
python3 -m overlap_bench.headline --experiment experiments/planner.toml --predict-from $C2 --gpus $GPUS \
  --comm-from $C4/comm-nccl.csv $C4/comm-ce.csv --out $L/pred-measured > $L/pred-measured.log 2>&1
echo "predictions (4-GPU bucket times) rc $? at $(el) s"; tail -1 $L/pred-measured.log
left=$((BUDGET - $(el)))
python3 -m overlap_bench.headline --experiment experiments/planner.toml --configs $CONFIGS --gpus $GPUS --build $B \
  --out $L/planner --deadline $left --predictions $L/pred-measured/predictions.csv > $L/planner.log 2>&1
echo "planner experiment rc $? at $(el) s"; tail -8 $L/planner.log
