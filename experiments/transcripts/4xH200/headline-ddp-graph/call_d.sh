#!/bin/bash
# Device call D (2 GPUs): the headline with both sides' steps captured in CUDA graphs (experiments/headline.toml with
# graph = true and ddp_graph = true: phase 4's --graph and bench_ddp.py --graph; FSDP2 eager), one pass, 4 rounds
# within the 9-minute deadline (ob-compare stops after the rounds that fit).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
source .gpu_commit_env; export OVERLAP_GIT_COMMIT OVERLAP_GIT_DIGEST PYTHONPATH=$PWD
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
GPUS=$(nvidia-smi -L | grep -c '^GPU ')
L=$OUT/d; mkdir -p $L
finish() { cd $OUT && find d -name '*.timeline.*' -delete; find d -name '*.trace.json' -delete; tar czf d.tgz d && rm -rf d; ls -la $OUT; }
trap finish EXIT
{ pwd; nvidia-smi; nvidia-smi topo -m; } > $L/machine.txt 2>&1
B=$PWD/.gpu/default; $B/phase4_chunked_nccl/phase4_chunked_nccl --version > $L/version.txt
echo "GPUs $GPUS: $(nvidia-smi -L | head -1); $(head -1 $L/version.txt)"
python3 -m overlap_bench.headline --experiment .device/headline-ddpgraph.toml --gpus $GPUS --build $B --out $L/headline \
  --deadline ${DEADLINE:-540} > $L/headline.log 2>&1
echo "headline rc $? at $(el) s"; tail -9 $L/headline.log | cut -c1-300
