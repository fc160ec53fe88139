#!/bin/bash
# Device call B (2 GPUs, warm after A): phase 4 before its rebuild into rooms (2cfbf4f) against this commit, every
# --sync strategy on the six configurations, the overlapped step as fresh processes in 3 shuffled rounds (ob-compare):
# after / before per strategy with its interval (issue 33's behaviour-unchanged run).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source .gpu_commit_env
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
L=$OUT/b; mkdir -p $L
{ cmake --preset gpu && cmake --build build/gpu -j24; } > $L/build.log 2>&1 || echo "build rc $?"
( cd .before && export OVERLAP_GIT_COMMIT=$BEFORE_COMMIT OVERLAP_GIT_DIGEST=$BEFORE_DIGEST && cmake --preset gpu && cmake --build build/gpu -j24 --target phase4_chunked_nccl ) > $L/build-before.log 2>&1 || echo "build-before rc $?"
echo "builds at $(el) s"
MPI="mpirun --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS"
NOW=$PWD/build/gpu/phase4_chunked_nccl/phase4_chunked_nccl
BEFORE=$PWD/.before/build/gpu/phase4_chunked_nccl/phase4_chunked_nccl
for c in 4096,16,512 4096,16,2048 2048,24,1024 1024,32,4096 1024,32,256 4096,16,8192; do
  [ $(el) -gt 400 ] && { echo "skipped $c (time)"; continue; }
  IFS=, read -r h l b <<<"$c"
  args=(); bases=()
  for s in nccl nccl-sym ce sharded sharded-ce; do
    args+=(--contender "before-$s=$MPI $BEFORE --mode overlap --hidden $h --layers $l --batch $b --sync $s --csv {csv}")
    args+=(--contender "after-$s=$MPI $NOW --mode overlap --hidden $h --layers $l --batch $b --sync $s --csv {csv}")
    bases+=(--baseline before-$s)
  done
  timeout 300 python3 scripts/compare.py --out $L/$h-$l-$b --rounds 3 --seed 33 --timeout 60 "${bases[@]}" "${args[@]}" > $L/compare-$h-$l-$b.log 2>&1 || echo "compare $c rc $?"
  echo "$c done at $(el) s"
done
python3 - $L <<'PY'
import glob, os, sys, pandas as pd
rows = []
for path in sorted(glob.glob(f"{sys.argv[1]}/*/compare.csv")):
    t = pd.read_csv(path)
    for s in ("nccl", "nccl-sym", "ce", "sharded", "sharded-ce"):
        r = t[(t.baseline == f"before-{s}") & (t.contender == f"after-{s}")]
        if len(r):
            r = r.iloc[0]
            rows.append({"config": os.path.basename(os.path.dirname(path)), "sync": s, "ratio": r.ratio, "ratio_ci_lo": r.ratio_ci_lo,
                         "ratio_ci_hi": r.ratio_ci_hi, "verdict": r.verdict, "after_ms": r.median_ms})
table = pd.DataFrame(rows)
table.to_csv(f"{sys.argv[1]}/before-after.csv", index=False)
print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
PY
rm -f $L/*/runs/*.timeline.* 2>/dev/null
cd $OUT && tar czf b.tgz b && rm -rf b
