#!/bin/bash
# Device call P (2 GPUs): the DDP jobs of ../trace-wrapper (25 and 64 MB on the headline's six configurations, gpt2-xl
# with 4 blocks at 25 MB) traced and timed by trace_job.py --graph: DDP's step and the compute-only step replayed from
# CUDA graphs, so that the profiler slows no launch; ob-analyze's added time against the unprofiled replayed steps.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
L=$OUT/p; T=$L/traces; mkdir -p $T
finish() { cd $OUT && tar czf p.tgz p && rm -rf p; }
trap finish EXIT
nvidia-smi > $L/machine.txt; nvidia-smi -L | head -1
export PATH=$PWD/.gpu/next/phase4_chunked_nccl:$PATH
source .gpu_commit_env; export OVERLAP_GIT_COMMIT OVERLAP_GIT_DIGEST
C="4096,16,512 2048,24,1024 4096,16,2048 1024,32,4096 1024,32,256 4096,16,8192"
R="torchrun --standalone --nproc_per_node=2 -m overlap_bench.trace_job --graph --steps 3 --iters 40 --passes 4 --out $T"
s=$SECONDS
timeout 200 $R --configs $C --bucket-mb 25 64 > $L/ddp.log 2>&1; echo "ddp rc $? at $((SECONDS-s)) s"
timeout 80 ${R/$T/$L/gpt2-xl} --model gpt2-xl --blocks 4 --seq 1024 --bucket-mb 25 > $L/gpt2xl.log 2>&1; echo "gpt2-xl rc $? at $((SECONDS-s)) s"
cat $T/trace_job.csv $L/gpt2-xl/trace_job.csv | cut -c1-250; du -sh $L; grep -h -i "error\|Traceback" $L/*.log | head
