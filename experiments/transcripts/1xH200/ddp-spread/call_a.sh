#!/bin/bash
# Device call A (1 GPU): does binding bench_ddp.py's process to a few cores narrow eager DDP's spread between fresh
# processes? Five rounds of three variants (unbound, the GPU's NUMA-local cores, 4 cores), order shuffled per round;
# each process the host-paced configurations at two caps, 12 iterations, 2 passes, as the headline runs them.
set -u
L=$OUT/a; mkdir -p $L
finish() { cd $OUT && tar czf a.tgz a && rm -rf a; }
trap finish EXIT
nvidia-smi > $L/machine.txt; nvidia-smi -L | head -1; lscpu > $L/lscpu.txt; nvidia-smi topo -m > $L/topo.txt 2>&1
bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | head -1 | tr 'A-F' 'a-f' | sed 's/^0000//')
local=$(cat /sys/bus/pci/devices/0000${bus#0000}/local_cpulist 2>/dev/null || cat /sys/bus/pci/devices/${bus,,}/local_cpulist)
echo "bus $bus local cpus $local nproc $(nproc)" | tee $L/cpus.txt
source .gpu_commit_env 2>/dev/null || true
export OVERLAP_GIT_COMMIT OVERLAP_GIT_DIGEST
C="1024,32,256 2048,24,1024 1024,32,4096 4096,16,512"
R="-m torch.distributed.run --standalone --nproc_per_node 1 -m overlap_bench.bench_ddp --configs $C --bucket-mb 25 128 --iters 12 --passes 2 --no-isolated"
s=$SECONDS
for r in 1 2 3 4 5; do
  for v in $(printf 'none\nnuma\nfour\n' | shuf); do
    case $v in none) P="";; numa) P="taskset -c $local";; four) P="taskset -c 2-5";; esac
    timeout 90 $P python3 $R --order-seed $r --csv $L/$v-$r.csv > $L/$v-$r.log 2>&1
    echo "round $r $v rc $? at $((SECONDS-s)) s"
  done
done
