#!/bin/bash
# Device call V (issue 52, one GPU): call U's FSDP2 with CUDA activity alone again in fresh processes, FSDP2 so on
# gpt2-xl (4 blocks), and eager DDP at 25 and 64 MB on the six configurations traced with CUDA activity alone and,
# in the same call, with CPU and CUDA activity (--profile light). Variables: NPROC (ranks, 1).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
L=$OUT/v; mkdir -p $L
finish() { cd $OUT && tar czf v.tgz v && rm -rf v; }
trap finish EXIT
nvidia-smi > $L/machine.txt; nvidia-smi -L | head -4
source .gpu_commit_env; export OVERLAP_GIT_COMMIT OVERLAP_GIT_DIGEST
s=$SECONDS
C="4096,16,512 2048,24,1024 4096,16,2048 1024,32,4096 1024,32,256 4096,16,8192"
R="torchrun --standalone --nproc_per_node=${NPROC:-1} -m overlap_bench.trace_job --steps 8 --compute-steps 8 --iters 40 --passes 4"
timeout 120 $R --fsdp --profile gpu --out $L/fsdp2-gpu --configs $C > $L/fsdp2-gpu.log 2>&1; echo "fsdp2-gpu rc $? at $((SECONDS-s)) s"
timeout 90 $R --fsdp --profile gpu --out $L/fsdp2-gpu-gpt2-xl --model gpt2-xl --blocks 4 --seq 1024 > $L/fsdp2xl.log 2>&1; echo "fsdp2-gpu gpt2-xl rc $? at $((SECONDS-s)) s"
timeout 150 $R --profile gpu --out $L/eager-gpu --configs $C --bucket-mb 25 64 > $L/eager-gpu.log 2>&1; echo "eager-gpu rc $? at $((SECONDS-s)) s"
timeout 150 $R --profile light --out $L/eager --configs $C --bucket-mb 25 64 > $L/eager.log 2>&1; echo "eager rc $? at $((SECONDS-s)) s"
for d in fsdp2-gpu fsdp2-gpu-gpt2-xl eager-gpu eager; do cut -d, -f1,9,10 $L/$d/trace_job.csv; done; du -sh $L
grep -h -i "error\|Traceback" $L/*.log | head
