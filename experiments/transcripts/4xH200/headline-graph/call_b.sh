#!/bin/bash
# Device call B (4 GPUs), at the commit of the sharded strategies under --graph: the headline with phase 4's steps and
# its calibration captured in CUDA graphs (experiments/headline.toml with graph = true; PyTorch's side eager, as
# before), with call A's predictions for 4 ranks from 2-GPU calibrations under --graph set beside its measured steps.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
source .gpu_commit_env; export PYTHONPATH=$PWD
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
GPUS=$(nvidia-smi -L | grep -c '^GPU ')
L=$OUT/b; mkdir -p $L
finish() { cd $OUT && find b -name '*.timeline.*' -delete; find b -name '*.trace.json' -delete; tar czf b.tgz b && rm -rf b; ls -la $OUT; }
trap finish EXIT
{ pwd; nvidia-smi; nvidia-smi topo -m; } > $L/machine.txt 2>&1
B=$PWD/.gpu/default; $B/phase4_chunked_nccl/phase4_chunked_nccl --version > $L/version.txt
echo "GPUs $GPUS: $(nvidia-smi -L | head -1); $(head -1 $L/version.txt)"
PRED=""; nvidia-smi -L | grep -q H200 && PRED="--predictions .device/predictions.csv"
python3 -m overlap_bench.headline --experiment .device/headline-graph.toml --gpus $GPUS --build $B --out $L/headline \
  --deadline ${DEADLINE:-540} $PRED > $L/headline.log 2>&1
echo "headline rc $? at $(el) s"; tail -9 $L/headline.log | cut -c1-300
