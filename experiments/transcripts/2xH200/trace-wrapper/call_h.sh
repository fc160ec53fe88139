#!/bin/bash
# Device call H (2 GPUs): the jobs of call G on two ranks (DDP at 25 and 64 MB and FSDP2 on the headline's six
# configurations, DDP at 25 MB on gpt2 and gpt2-xl with 4 blocks), traced and timed by trace_job.py, the
# compute-only and wrapped steps in turn over 4 passes with the target's interval: ob-analyze's whole added time
# (exposed communication, slowdown, the wrapper's kernels and host calls) against the unprofiled step's.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
L=$OUT/h; T=$L/traces; mkdir -p $T
finish() { cd $OUT && tar czf h.tgz h && rm -rf h; }
trap finish EXIT
nvidia-smi > $L/machine.txt; nvidia-smi -L | head -1
export PATH=$PWD/.gpu/default/phase4_chunked_nccl:$PATH
source .gpu_commit_env 2>/dev/null || true
export OVERLAP_GIT_COMMIT OVERLAP_GIT_DIGEST
C="4096,16,512 2048,24,1024 4096,16,2048 1024,32,4096 1024,32,256 4096,16,8192"
R="torchrun --standalone --nproc_per_node=2 -m overlap_bench.trace_job --steps 3 --iters 40 --passes 4 --out $T"
s=$SECONDS
timeout 260 $R --configs $C --bucket-mb 25 64 > $L/ddp.log 2>&1; echo "ddp rc $? at $((SECONDS-s)) s"
timeout 200 $R --configs $C --fsdp > $L/fsdp.log 2>&1; echo "fsdp rc $? at $((SECONDS-s)) s"
timeout 120 ${R/$T/$L/gpt2} --model gpt2 --seq 1024 --bucket-mb 25 > $L/gpt2.log 2>&1; echo "gpt2 rc $? at $((SECONDS-s)) s"
timeout 120 ${R/$T/$L/gpt2-xl} --model gpt2-xl --blocks 4 --seq 1024 --bucket-mb 25 > $L/gpt2xl.log 2>&1; echo "gpt2-xl rc $? at $((SECONDS-s)) s"
cat $T/trace_job.csv $L/gpt2*/trace_job.csv; du -sh $L; grep -h -i "error\|Traceback" | head
