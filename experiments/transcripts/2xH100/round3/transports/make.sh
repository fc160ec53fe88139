#!/bin/bash
# Device call D (2 GPUs, warm): the transports of call A, time-guarded.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
T=$OUT/d; mkdir -p $T
trap 'cd $OUT && tar czf d.tgz d && rm -rf d' EXIT
MPI="mpirun --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS"
P4=build/gpu/phase4_chunked_nccl/phase4_chunked_nccl
NT=.nccl-tests/build/all_reduce_perf
for t in nvlink shm socket; do
  case $t in nvlink) e="";; shm) e="NCCL_P2P_DISABLE=1";; socket) e="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo";; esac
  timeout 40 env $e $NT -b 1M -e 256M -f 4 -g 2 -w 3 -n 10 -c 1 > $T/nccl-tests-$t.txt 2>&1 || echo "nccl-tests $t rc $?"
  echo "nccl-tests $t at $(el) s"
  timeout 60 $MPI $P4 --transport $t --nccl-path --mode comm --check --quiet --iters 10 --hidden 4096 --layers 4 --batch 8 --sweep bucket-mb=1,16,64,256 --csv $T/comm-$t.csv > $T/comm-$t.log 2>&1 || echo "FAILED comm $t rc $?"
  echo "comm $t at $(el) s"
  timeout 60 $MPI $P4 --transport $t --nccl-path --check --quiet --hidden 4096 --layers 16 --batch 512 --sync nccl --csv $T/step-nccl-$t.csv > $T/step-nccl-$t.log 2>&1 || echo "FAILED step $t rc $?"
  echo "step $t at $(el) s"
  rm -f $T/*.timeline.*
done
timeout 30 $MPI $P4 --transport shm --sync ce --quiet --csv $T/refused.csv > $T/refused-ce-shm.log 2>&1; echo "ce on shm rc $? (2 expected): $(head -c 300 $T/refused-ce-shm.log)"
grep -h "Avg bus\|^ *268435456\|^ *16777216" $T/nccl-tests-*.txt
