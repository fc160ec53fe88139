#!/bin/bash
# Device call E (1 GPU): this commit's phase 4 GPU tests on one GPU, and the sharded overlapped step of three builds
# (before the rooms 2cfbf4f, d3bd309 with three more events per layer, this commit with them cut) as fresh processes
# in 3 shuffled rounds (ob-compare) on one rank.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source .gpu_commit_env
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
L=$OUT/e; mkdir -p $L
trap 'cd $OUT && tar czf e.tgz e && rm -rf e' EXIT
nvidia-smi -L > $L/nvidia-smi.txt 2>&1
( cmake --preset gpu && cmake --build build/gpu -j10 --target phase4_chunked_nccl phase4_gpu_tests ) > $L/build.log 2>&1 &
B1=$!
( cd .before && export OVERLAP_GIT_COMMIT=$BEFORE_COMMIT OVERLAP_GIT_DIGEST=$BEFORE_DIGEST && cmake --preset gpu && cmake --build build/gpu -j3 --target phase4_chunked_nccl ) > $L/build-before.log 2>&1 &
B2=$!
( cd .mid && export OVERLAP_GIT_COMMIT=$MID_COMMIT OVERLAP_GIT_DIGEST=$MID_DIGEST && cmake --preset gpu && cmake --build build/gpu -j3 --target phase4_chunked_nccl ) > $L/build-mid.log 2>&1 &
B3=$!
wait $B1; echo "build rc $? at $(el) s"; wait $B2; echo "before rc $?"; wait $B3; echo "mid rc $? at $(el) s"
P=phase4_chunked_nccl/phase4_chunked_nccl
for c in 1024,32,256 4096,16,512; do
  IFS=, read -r h l b <<<"$c"
  args=()
  for s in sharded-ce sharded; do
    for v in before:.before/build/gpu mid:.mid/build/gpu now:build/gpu; do
      args+=(--contender "${v%%:*}-$s=$PWD/${v#*:}/$P --mode overlap --hidden $h --layers $l --batch $b --sync $s --csv {csv}")
    done
  done
  timeout 150 python3 scripts/compare.py --out $L/$h-$l-$b --rounds 3 --seed 35 --timeout 40 --baseline before-sharded-ce --baseline before-sharded "${args[@]}" > $L/compare-$h-$l-$b.log 2>&1 || echo "compare $c rc $?"
  echo "$c at $(el) s"
  grep -E "x \[" $L/compare-$h-$l-$b.log | head -8
done
rm -f $L/*/runs/*.timeline.*
timeout 150 ctest --test-dir build/gpu -R "phase4_gpu_np" --output-on-failure > $L/ctest-phase4-gpu.log 2>&1; echo "ctest phase4_gpu rc $? at $(el) s"
grep -E "tests passed|Failure$|Expected|actual|at [0-9]+,|note: the comm-only" $L/ctest-phase4-gpu.log | head -16
