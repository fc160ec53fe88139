#!/bin/bash
# Device run 7 (1 GPU): the same-work compute-only step: GPU build, GPU and unit tests, then nccl, ce, sharded and
# sharded-ce with --check on three configurations: compute, overlap and bound side by side with their intervals.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source .gpu_commit_env
L=$OUT/logs; mkdir -p $L
nvidia-smi -L > $L/nvidia-smi.txt 2>&1
start=$(date +%s)
{ cmake --preset gpu && cmake --build build/gpu -j16; } > $L/build.log 2>&1; echo "build rc $? in $(( $(date +%s) - start )) s"
grep -E "error|warning" $L/build.log | head -5
start=$(date +%s)
timeout 240 ctest --test-dir build/gpu -L gpu --output-on-failure > $L/ctest-gpu.log 2>&1; echo "ctest gpu rc $? in $(( $(date +%s) - start )) s"; grep -E "tests passed|Failed|\*\*\*|Expected|Which is" $L/ctest-gpu.log | head -20
timeout 120 ctest --test-dir build/gpu -L unit -j16 > $L/ctest-unit.log 2>&1; echo "ctest unit rc $?"; grep "tests passed" $L/ctest-unit.log
P4=build/gpu/phase4_chunked_nccl/phase4_chunked_nccl
start=$(date +%s)
for c in 4096,16,2048 4096,16,512 1024,32,256; do
  IFS=, read -r h l b <<<"$c"
  for s in nccl ce sharded sharded-ce; do
    [ $(( $(date +%s) - start )) -gt 200 ] && { echo "skipped $s $c (time)"; continue; }
    timeout 100 $P4 --check --quiet --hidden $h --layers $l --batch $b --sync $s --csv $L/p4-$s-$h-$l-$b.csv > $L/p4-$s-$h-$l-$b.log 2>&1 || echo "FAILED rc $?: --sync $s $c"
    grep -h "warning" $L/p4-$s-$h-$l-$b.log
    rm -f $L/p4-$s-$h-$l-$b.timeline.*
  done
done
echo "runs in $(( $(date +%s) - start )) s"
python3 - $L <<'PY'
import glob, os, sys, pandas as pd
rows = []
for path in sorted(glob.glob(f"{sys.argv[1]}/p4-*.csv")):
    t = pd.read_csv(path).set_index("mode")
    c, o, b = t.loc["compute"], t.loc["overlap"], t.loc["bound"]
    rows.append({"run": os.path.basename(path)[3:-4], "compute": c.time_ms_p50, "compute_ci": c.time_ms_p50_ci_rel,
                 "overlap": o.time_ms_p50, "overlap_ci": o.time_ms_p50_ci_rel, "bound": b.time_ms_p50,
                 "bound_kind": b.bound_kind,
                 "ovl_ge_comp": o.time_ms_p50 * (1 + o.time_ms_p50_ci_rel) >= c.time_ms_p50 * (1 - c.time_ms_p50_ci_rel),
                 "bound_le_ovl": b.bound_kind != "bound" or b.time_ms_p50 <= o.time_ms_p50 * (1 + o.time_ms_p50_ci_rel)})
table = pd.DataFrame(rows)
table.to_csv(f"{sys.argv[1]}/same-work.csv", index=False)
print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
PY
tar czf $OUT/all.tgz -C $OUT logs && rm -rf $L
