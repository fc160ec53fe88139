#!/bin/bash
# Device call E (4 GPUs, after call_c.sh and call_d2.sh on the same machine): 2 x 2 emulated nodes over NCCL's
# sockets with more threads and sockets, 1024,32,256 at three bucket caps (results/4xH100/planner/emulated/).
set -u; export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source .gpu_commit_env; E=$OUT/e; mkdir -p $E; P4=$PWD/.gpu/default/phase4_chunked_nccl/phase4_chunked_nccl
nvidia-smi -L > $E/machine.txt; $P4 --version > $E/version.txt
timeout 150 mpirun --bind-to none -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS \
  -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,NET -x NCCL_SOCKET_IFNAME=lo -np 4 $P4 --emulate-nodes 2 \
  --socket-threads 4 --socks-per-thread 4 --nccl-path --hidden 1024 --layers 32 --batch 256 --sweep bucket-mb=4,32,128 \
  --iters 12 --order-seed 1 --csv $E/p4.csv > $E/p4.log 2>&1; echo "rc $?"
find $E -name '*.timeline.*' -delete; find $E -name '*.trace.json' -delete; cd $OUT && tar czf e.tgz e && rm -rf e
# On the CPU machine: python3 -m overlap_bench.check_prediction --calibrations
#   results/4xH100/planner/predictions/calibration-2gpu/1024x32x256.calibration.json --measured emulated/p4.csv
#   --links-from emulated/p4.csv --csv emulated/check.csv
