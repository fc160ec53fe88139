#!/bin/bash
# Device call I (2 GPUs): phase 4 on the headline's six configurations with nccl, ce and sharded-ce at 25 MB
# buckets, each run's own timeline beside its summary (no profiler): the traces ob-analyze-check holds against each
# run's overlapped step minus its compute-only step (issue 52's phase 4 rows).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
P4=$PWD/.gpu/default/phase4_chunked_nccl/phase4_chunked_nccl; L=$OUT/i; mkdir -p $L
finish() { cd $OUT && tar czf i.tgz i && rm -rf i; }
trap finish EXIT
nvidia-smi > $L/machine.txt; nvidia-smi -L; $P4 --version | tee $L/version.txt | head -1
F="--oversubscribe --bind-to none -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS"
s=$SECONDS
for c in 4096,16,512 2048,24,1024 4096,16,2048 1024,32,4096 1024,32,256 4096,16,8192; do
  IFS=, read h l b <<< "$c"
  for sync in nccl ce sharded-ce; do
    n=p4-$sync-${h}x${l}x${b}
    timeout 90 mpirun -n 2 $F $P4 --sync $sync --hidden $h --layers $l --batch $b --bucket-mb 25 --iters 20 \
      --csv $L/$n.csv > $L/$n.log 2>&1; echo "$n rc $? at $((SECONDS-s)) s"
  done
done
du -sh $L
