#!/bin/bash
# Device call L (2 GPUs): the two-rank jobs of call H (DDP at 25 and 64 MB and FSDP2 on the headline's six configurations,
# DDP at 25 MB on gpt2 and gpt2-xl with 4 blocks), traced by trace_job.py with --profile gpu (CUDA activity only),
# and timed as before (compute-only and wrapped steps in turn over 4
# passes, the target's interval): how much of the traced steps' excess over the unprofiled ones is the profiler's
# own host cost.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
L=$OUT/l; mkdir -p $L
finish() { cd $OUT && tar czf l.tgz l && rm -rf l; }
trap finish EXIT
nvidia-smi > $L/machine.txt; nvidia-smi -L
export PATH=$PWD/.gpu/default/phase4_chunked_nccl:$PATH
source .gpu_commit_env 2>/dev/null || true
export OVERLAP_GIT_COMMIT OVERLAP_GIT_DIGEST
C="4096,16,512 2048,24,1024 4096,16,2048 1024,32,4096 1024,32,256 4096,16,8192"
s=$SECONDS
for P in gpu; do
  T=$L/$P; mkdir -p $T
  R="torchrun --standalone --nproc_per_node=2 -m overlap_bench.trace_job --profile $P --steps 3 --iters 40 --passes 4"
  timeout 200 $R --out $T --configs $C --bucket-mb 25 64 > $L/$P-ddp.log 2>&1; echo "$P ddp rc $? at $((SECONDS-s)) s"
  timeout 150 $R --out $T --configs $C --fsdp > $L/$P-fsdp.log 2>&1; echo "$P fsdp rc $? at $((SECONDS-s)) s"
  timeout 100 $R --out $T/gpt2 --model gpt2 --seq 1024 --bucket-mb 25 > $L/$P-gpt2.log 2>&1; echo "$P gpt2 rc $? at $((SECONDS-s)) s"
  timeout 100 $R --out $T/gpt2-xl --model gpt2-xl --blocks 4 --seq 1024 --bucket-mb 25 > $L/$P-gpt2xl.log 2>&1
  echo "$P gpt2-xl rc $? at $((SECONDS-s)) s"
done
du -sh $L
