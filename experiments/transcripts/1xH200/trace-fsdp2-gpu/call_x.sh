#!/bin/bash
# Device call X (issue 52, one GPU): FSDP2 on the six configurations and on gpt2-xl (4 blocks), traced with CPU and
# CUDA activity (--profile light) and with CUDA activity alone (--profile gpu, compute-only steps in their own
# trace) in turn, twice (light, gpu, gpu, light: each profile first once), fresh processes each.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PATH=$PWD/.gpu/default/phase4_chunked_nccl:$PATH
L=$OUT/x; mkdir -p $L
finish() { cd $OUT && tar czf x.tgz x && rm -rf x; }
trap finish EXIT
nvidia-smi > $L/machine.txt; nvidia-smi -L | head -4
source .gpu_commit_env; export OVERLAP_GIT_COMMIT OVERLAP_GIT_DIGEST
s=$SECONDS
C="4096,16,512 2048,24,1024 4096,16,2048 1024,32,4096 1024,32,256 4096,16,8192"
R="torchrun --standalone --nproc_per_node=1 -m overlap_bench.trace_job --fsdp --steps 8 --compute-steps 8 --iters 40 --passes 4"
for round in 1 2; do
  order="light gpu"; [ $round = 2 ] && order="gpu light"
  for p in $order; do
    timeout 100 $R --profile $p --out $L/r$round-$p --configs $C > $L/r$round-$p.log 2>&1; echo "r$round $p rc $? at $((SECONDS-s)) s"
    timeout 60 $R --profile $p --out $L/r$round-$p-gpt2-xl --model gpt2-xl --blocks 4 --seq 1024 > $L/r$round-$p-xl.log 2>&1; echo "r$round $p gpt2-xl rc $? at $((SECONDS-s)) s"
  done
done
du -sh $L; grep -h -i "error\|Traceback" $L/*.log | head
