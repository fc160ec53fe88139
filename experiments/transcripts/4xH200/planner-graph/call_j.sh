#!/bin/bash
# Device call J (4 GPUs): the planner experiment (experiments/planner.toml) with both sides replayed from CUDA graphs.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
source .gpu_commit_env; export OVERLAP_GIT_COMMIT OVERLAP_GIT_DIGEST PYTHONPATH=$PWD
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
GPUS=$(nvidia-smi -L | grep -c '^GPU ')
L=$OUT/p; mkdir -p $L
finish() { cd $OUT && find p -name '*.timeline.*' -delete; find p -name '*.trace.json' -delete; tar czf p.tgz p && rm -rf p; ls -la $OUT; }
trap finish EXIT
{ pwd; nvidia-smi; nvidia-smi topo -m; } > $L/machine.txt 2>&1
B=$PWD/.gpu/default; $B/phase4_chunked_nccl/phase4_chunked_nccl --version > $L/version.txt
echo "GPUs $GPUS: $(nvidia-smi -L | head -1); $(head -1 $L/version.txt)"
python3 -m overlap_bench.headline --experiment .device/planner-graph.toml --gpus $GPUS --build $B --out $L/headline \
  --deadline ${DEADLINE:-540} > $L/headline.log 2>&1
echo "headline rc $? at $(el) s"; tail -9 $L/headline.log | cut -c1-300
