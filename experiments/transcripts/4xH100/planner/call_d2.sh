#!/bin/bash
# Device call D2 (4 GPUs), after C1 on the same kind (its predictions in .device/c1, made before these runs):
# ob-headline --experiment experiments/planner.toml --configs $CONFIGS on 4 GPUs (its own calibration, 3 rounds).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 PYTHONUNBUFFERED=1
source .gpu_commit_env
export PYTHONPATH=$PWD
B=$PWD/.gpu/default; export PATH=$B/phase4_chunked_nccl:$PATH
P4=$B/phase4_chunked_nccl/phase4_chunked_nccl
NAME=${NAME:-d2}; CONFIGS=${CONFIGS:?}; BUDGET=${BUDGET:-400}
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
L=$OUT/$NAME; mkdir -p $L
finish() { cd $OUT && find $NAME -name '*.timeline.*' -delete; find $NAME -name '*.trace.json' -delete
  tar czf $NAME.tgz $NAME && rm -rf $NAME; ls -la $OUT; }
trap finish EXIT
{ nvidia-smi -L; nvidia-smi topo -m; } > $L/machine.txt 2>&1; $P4 --version | tee $L/version.txt; head -1 $L/machine.txt
GPUS=$(nvidia-smi -L | grep -c '^GPU ')
python3 -m overlap_bench.headline --experiment experiments/planner.toml --configs $CONFIGS --gpus $GPUS --build $B \
  --out $L/planner --deadline $((BUDGET - $(el))) --predictions .device/c1/pred-measured/predictions.csv > $L/planner.log 2>&1
echo "planner experiment rc $? at $(el) s"; tail -5 $L/planner.log
