#!/bin/bash
# Device call Y (issue 52, one GPU): the bench's trace part (scripts/bench_gpu.sh --part trace) on one rank, every
# step as bench_parts expands it, run in turn (the part's analyses need ob-analyze-check, not installed on the image:
# they run on the CPU machine afterwards); the build of phase 4 carried (.gpu/default: phase4_model for --model).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PATH=$PWD/.gpu/default/phase4_chunked_nccl:$PATH
L=$OUT/y; mkdir -p $L
finish() { cd $OUT && tar czf y.tgz y && rm -rf y; }
trap finish EXIT
nvidia-smi > $L/machine.txt; nvidia-smi -L | head -4
source .gpu_commit_env; export OVERLAP_GIT_COMMIT OVERLAP_GIT_DIGEST
s=$SECONDS
python3 -m overlap_bench.bench_parts --part trace --gpus 1 --build .gpu/default --out $L --resolved $L/experiment.json > $L/steps.tsv || exit
while IFS=$'\t' read -r -u 3 name command; do
  eval "timeout 170 $command" > $L/$name.log 2>&1; echo "$name rc $? at $((SECONDS-s)) s"
done 3< $L/steps.tsv
du -sh $L; grep -h -i "error\|Traceback" $L/*.log | head
