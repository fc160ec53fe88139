#!/bin/bash
# Device run 9 (1 GPU): the GPU build of this commit, its GPU and unit tests, then every --sync strategy with --check on
# three configurations: the compute-only, overlapped and bound rows of each run side by side (same-work.csv).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source .gpu_commit_env
L=$OUT/same-work; mkdir -p $L
nvidia-smi -L > $L/nvidia-smi.txt 2>&1
start=$(date +%s)
{ cmake --preset gpu && cmake --build build/gpu -j16; } > $L/build.log 2>&1; echo "build rc $? in $(( $(date +%s) - start )) s"
start=$(date +%s)
timeout 200 ctest --test-dir build/gpu -L gpu --output-on-failure > $L/ctest-gpu.log 2>&1; echo "ctest gpu rc $? in $(( $(date +%s) - start )) s"; grep -E "tests passed|\*\*\*Failed|Failure|Expected|actual" $L/ctest-gpu.log | head -12
timeout 100 ctest --test-dir build/gpu -L unit -j16 > $L/ctest-unit.log 2>&1; echo "ctest unit rc $?"; grep "tests passed" $L/ctest-unit.log
P4=build/gpu/phase4_chunked_nccl/phase4_chunked_nccl
start=$(date +%s)
for c in 4096,16,2048 4096,16,512 1024,32,256; do
  IFS=, read -r h l b <<<"$c"
  for s in nccl nccl-sym ce sharded sharded-ce; do
    [ $(( $(date +%s) - start )) -gt 150 ] && { echo "skipped $s $c (time)"; continue; }
    n=$s-$h-$l-$b
    timeout 60 $P4 --check --quiet --hidden $h --layers $l --batch $b --sync $s --csv $L/$n.csv > $L/$n.log 2>&1 || echo "FAILED rc $?: --sync $s $c"
    grep -h "warning" $L/$n.log
    rm -f $L/$n.timeline.*
  done
done
echo "runs in $(( $(date +%s) - start )) s"
python3 - $L <<'PY'
import glob, os, sys, pandas as pd
rows = []
for path in sorted(glob.glob(f"{sys.argv[1]}/*-*-*-*.csv")):
    t = pd.read_csv(path).set_index("mode")
    c, o, b = t.loc["compute"], t.loc["overlap"], t.loc["bound"]
    rows.append({"run": os.path.basename(path)[:-4], "compute_ms": c.time_ms_p50, "compute_ci_rel": c.time_ms_p50_ci_rel,
                 "overlap_ms": o.time_ms_p50, "overlap_ci_rel": o.time_ms_p50_ci_rel, "bound_ms": b.time_ms_p50,
                 "bound_kind": b.bound_kind,
                 "overlap_ge_compute": bool(o.time_ms_p50 * (1 + o.time_ms_p50_ci_rel) >= c.time_ms_p50 * (1 - c.time_ms_p50_ci_rel)),
                 "bound_le_overlap": bool(b.bound_kind != "bound" or b.time_ms_p50 <= o.time_ms_p50 * (1 + o.time_ms_p50_ci_rel))})
table = pd.DataFrame(rows)
table.to_csv(f"{sys.argv[1]}/same-work.csv", index=False)
print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
PY
tar czf $OUT/same-work.tgz -C $OUT same-work && rm -rf $L
