#!/bin/bash
# Device run 8 (1 GPU): why an overlapped step beats its compute-only step on one GPU (4096,16,2048): the same runs
# with the learning rate at 0 (the weights stay where they start in every mode) against the default, and the modes
# as separate processes in both orders; the GPU's clock and power beside them.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source .gpu_commit_env
L=$OUT/why; mkdir -p $L
start=$(date +%s)
{ cmake --preset gpu && cmake --build build/gpu -j16 --target phase4_chunked_nccl; } > $L/build.log 2>&1; echo "build rc $? in $(( $(date +%s) - start )) s"
P4=build/gpu/phase4_chunked_nccl/phase4_chunked_nccl
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 200 > $L/smi.csv 2>&1 &
SMI=$!
run() {  # name, args...
  local name=$1; shift
  timeout 60 $P4 --quiet --hidden 4096 --layers 16 --batch 2048 --iters 20 "$@" --csv $L/$name.csv > $L/$name.log 2>&1 || echo "FAILED $name"
  python3 -c "
import pandas as pd; t = pd.read_csv('$L/$name.csv').set_index('mode')
print('$name'.ljust(24), '  '.join(f'{m} {t.loc[m].time_ms_p50:.3f} [{t.loc[m].time_ms_min:.3f},{t.loc[m].time_ms_max:.3f}] bw {t.loc[m].backward_ms_p50:.3f}' for m in ['compute','overlap'] if m in t.index))"
  rm -f $L/$name.timeline.trace.json
}
for s in sharded nccl sharded-ce; do
  run $s-lr-default --sync $s
  run $s-lr0 --sync $s --lr 0
done
run sharded-c1 --sync sharded --mode compute
run sharded-o1 --sync sharded --mode overlap
run sharded-o2 --sync sharded --mode overlap
run sharded-c2 --sync sharded --mode compute
run sharded-c-lr0 --sync sharded --mode compute --lr 0
run sharded-o-lr0 --sync sharded --mode overlap --lr 0
kill $SMI
gzip $L/*.timeline.csv
tar czf $OUT/why.tgz -C $OUT why && rm -rf $L
