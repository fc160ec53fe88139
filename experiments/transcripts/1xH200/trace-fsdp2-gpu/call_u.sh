#!/bin/bash
# Device call U (issue 52, one GPU): the GPU test of trace_job.py (its CUDA-only profile with the compute-only steps
# in their own trace), FSDP2 on the six configurations traced with CUDA activity alone (--profile gpu, compute-only
# steps apart) and, in the same call, with CPU and CUDA activity (--profile light, compute-only steps marked), and
# phase 4 on one rank writing its timeline and Chrome trace. Variables: NPROC (ranks, 1).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
L=$OUT/u; mkdir -p $L
finish() { cd $OUT && tar czf u.tgz u && rm -rf u; }
trap finish EXIT
nvidia-smi > $L/machine.txt; nvidia-smi -L | head -4
source .gpu_commit_env; export OVERLAP_GIT_COMMIT OVERLAP_GIT_DIGEST
s=$SECONDS
timeout 200 python3 -m pytest -q tests/python/test_trace_job_gpu.py > $L/pytest.log 2>&1; echo "pytest rc $? at $((SECONDS-s)) s"; tail -2 $L/pytest.log
C="4096,16,512 2048,24,1024 4096,16,2048 1024,32,4096 1024,32,256 4096,16,8192"
R="torchrun --standalone --nproc_per_node=${NPROC:-1} -m overlap_bench.trace_job --steps 8 --compute-steps 8 --iters 40 --passes 4"
timeout 150 $R --fsdp --profile gpu --out $L/fsdp2-gpu --configs $C > $L/fsdp2-gpu.log 2>&1; echo "fsdp2-gpu rc $? at $((SECONDS-s)) s"
timeout 150 $R --fsdp --profile light --out $L/fsdp2 --configs $C > $L/fsdp2.log 2>&1; echo "fsdp2 rc $? at $((SECONDS-s)) s"
P4=$PWD/.gpu/default/phase4_chunked_nccl/phase4_chunked_nccl; mkdir -p $L/p4
for c in 4096,16,512 1024,32,256; do
  IFS=, read h l b <<< "$c"
  for sync in nccl ce; do
    n=p4-$sync-${h}x${l}x${b}
    timeout 60 mpirun -n ${NPROC:-1} --bind-to none $P4 --sync $sync --hidden $h --layers $l --batch $b --bucket-mb 25 \
      --iters 20 --csv $L/p4/$n.csv > $L/p4/$n.log 2>&1; echo "$n rc $? at $((SECONDS-s)) s"
  done
done
ls $L/p4 | head -20
for d in fsdp2-gpu fsdp2; do cut -c1-150 $L/$d/trace_job.csv; done; du -sh $L
grep -h -i "error\|Traceback" $L/*.log | head
