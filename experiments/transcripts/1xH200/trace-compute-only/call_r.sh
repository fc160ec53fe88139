#!/bin/bash
# Device calls R1, R2 (issue 52): trace_job.py, which now profiles the job's compute-only step (ob_compute_only)
# beside its steps, on DDP replayed from CUDA graphs (--graph) at 25 and 64 MB on the six headline configurations and
# gpt2-xl with 4 blocks, and on eager DDP (EAGER configurations, 25 and 64 MB). Variables: NPROC (ranks, 2), CONFIGS
# (the six), EAGER (the configurations traced eager), STEPS (traced steps, 3), CSTEPS (compute-only steps, 2),
# EPROFILE (the eager jobs' --profile, full). R1: NPROC=1 (its eager jobs in a second call, as this script runs them:
# the first call's line quoted them wrongly); R2: NPROC=1 STEPS=8 CSTEPS=8 EPROFILE=light.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
L=$OUT/r; mkdir -p $L
finish() { cd $OUT && tar czf r.tgz r && rm -rf r; }
trap finish EXIT
nvidia-smi > $L/machine.txt; nvidia-smi -L | head -2
source .gpu_commit_env; export OVERLAP_GIT_COMMIT OVERLAP_GIT_DIGEST
export PATH=$PWD/.gpu/default/phase4_chunked_nccl:$PATH
s=$SECONDS
E=${EAGER:-"4096,16,2048 1024,32,4096"}
C=${CONFIGS:-"4096,16,512 2048,24,1024 4096,16,2048 1024,32,4096 1024,32,256 4096,16,8192"}
R="torchrun --standalone --nproc_per_node=${NPROC:-2} -m overlap_bench.trace_job --steps ${STEPS:-3} --compute-steps ${CSTEPS:-2} --iters 40 --passes 4"
timeout 220 $R --graph --out $L/graph --configs $C --bucket-mb 25 64 > $L/graph.log 2>&1; echo "graph rc $? at $((SECONDS-s)) s"
timeout 90 $R --graph --out $L/gpt2-xl --model gpt2-xl --blocks 4 --seq 1024 --bucket-mb 25 > $L/gpt2xl.log 2>&1; echo "gpt2-xl rc $? at $((SECONDS-s)) s"
timeout 120 $R --out $L/eager --profile ${EPROFILE:-full} --configs $E --bucket-mb 25 64 > $L/eager.log 2>&1; echo "eager rc $? at $((SECONDS-s)) s"
for d in graph gpt2-xl eager; do cut -c1-200 $L/$d/trace_job.csv; done; du -sh $L; grep -h -i "error\|Traceback" $L/*.log | head
