#!/bin/bash
# Device call L (4 GPUs), at 0c3395e (the schedule bound a lower bound by construction): the headline on all GPUs
# (experiments/headline.toml: six configurations, phase 4's five strategies and its planner's plan, DDP at four caps
# and FSDP2, three rounds, calibration included) within one call; its bound rows against their steps on 4 ranks.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
source .gpu_commit_env; export PYTHONPATH=$PWD
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
GPUS=$(nvidia-smi -L | grep -c '^GPU ')
L=$OUT/l; mkdir -p $L
finish() { cd $OUT && find l -name '*.timeline.*' -delete; find l -name '*.trace.json' -delete; tar czf l.tgz l && rm -rf l; ls -la $OUT; }
trap finish EXIT
{ pwd; nvidia-smi; nvidia-smi topo -m; } > $L/machine.txt 2>&1
B=$PWD/.gpu/default; $B/phase4_chunked_nccl/phase4_chunked_nccl --version > $L/version.txt
echo "GPUs $GPUS: $(nvidia-smi -L | head -1); $(head -1 $L/version.txt)"
python3 -m overlap_bench.headline --gpus $GPUS --build $B --out $L/headline --deadline 540 > $L/headline.log 2>&1
echo "headline rc $? at $(el) s"; tail -9 $L/headline.log | cut -c1-300
