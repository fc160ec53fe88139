#!/bin/bash
# Device call K (2 GPUs), 087a9c7 (the breakdown's parts as measured, scaled only where an absolute time feeds a model):
# phase 4's GPU tests on 2 ranks and the rooms', then the headline's calibration of two configurations under --graph at
# fd750ce (every timed step marked) and at 087a9c7: the calibrated slowdowns side by side.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 GTEST_COLOR=no
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
B=$PWD/.gpu/default
L=$OUT/k; mkdir -p $L
finish() { cd $OUT && find k -name '*.timeline.*' -delete; tar czf k.tgz k && rm -rf k; }
trap finish EXIT
s=$SECONDS
M="mpirun --bind-to none -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS -n 2"
timeout 120 $M $B/tests/phase4/phase4_gpu_tests > $L/gpu_np2.log 2>&1; echo "phase4_gpu_tests np2 rc $? at $((SECONDS-s)) s"
grep -h "PASSED\|FAILED\|Failure" $L/gpu_np2.log | head
timeout 60 $M $B/tests/phase4/phase4_rooms_gpu_tests > $L/rooms.log 2>&1; echo "rooms rc $?"; grep -h "PASSED\|FAILED" $L/rooms.log
for c in 1024x32x4096 1024x32x256; do IFS=x read h l b <<< "$c"
  for side in base default; do
    timeout 60 $M $PWD/.gpu/$side/phase4_chunked_nccl/phase4_chunked_nccl --hidden $h --layers $l --batch $b --calibrate \
      --plan-syncs nccl,ce,sharded-ce --mode compute --iters 3 --graph --csv $L/$side-$c.csv > $L/$side-$c.log 2>&1
    echo "$side $c rc $? at $((SECONDS-s)) s; $(grep -c 'slowdown is -' $L/$side-$c.log) negative-slowdown warnings"
    python3 -c "
import json; d=json.load(open('$L/$side-$c.calibration.json'))
print('  compute step_ms sum %.3f iteration %.3f' % (sum(d['compute']['step_ms']), d['compute']['iteration_ms']))
for s in d['strategies']: print('  %-10s slowdown %s stretch %s' % (s['sync'], [round(x,3) for x in s['slowdown']], [round(x,2) for x in s['stretch']]))"
  done
done
