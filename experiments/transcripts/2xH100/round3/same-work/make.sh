#!/bin/bash
# Device call A (2 GPUs): builds (this commit, the commit before phase 4's rooms, nccl-tests) in parallel; ctest -L gpu
# on both GPUs; every --sync strategy with --check on three configurations (same-work.csv); the transports: phase 4
# with --transport shm/socket --nccl-path, comm-only bus bandwidth per transport, nccl-tests under the same variables.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source .gpu_commit_env
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
L=$OUT/a; mkdir -p $L/same-work $L/transport
{ nvidia-smi -L; nvidia-smi topo -m; nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv; } > $L/nvidia-smi.txt 2>&1
NCCL_H=$(find /usr/include /usr/local /opt -name nccl.h 2>/dev/null | head -1); echo "nccl.h: $NCCL_H"
( cmake --preset gpu && cmake --build build/gpu -j24 ) > $L/build.log 2>&1 &
B1=$!
( cd .before && export OVERLAP_GIT_COMMIT=$BEFORE_COMMIT OVERLAP_GIT_DIGEST=$BEFORE_DIGEST && cmake --preset gpu && cmake --build build/gpu -j8 --target phase4_chunked_nccl ) > $L/build-before.log 2>&1 &
B2=$!
( make -C .nccl-tests -j8 MPI=0 NCCL_HOME=$(dirname $(dirname $NCCL_H)) NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" ) > $L/build-nccl-tests.log 2>&1 &
B3=$!
wait $B1; echo "build rc $? at $(el) s"; wait $B2; echo "build-before rc $? at $(el) s"; wait $B3; echo "nccl-tests rc $? at $(el) s"
timeout 240 ctest --test-dir build/gpu -L gpu --output-on-failure > $L/ctest-gpu.log 2>&1; echo "ctest gpu rc $? at $(el) s"
grep -E "tests passed|\*\*\*Failed|Failure$|Expected|Which is|actual|at [0-9]+," $L/ctest-gpu.log | head -24
MPI="mpirun --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS"
P4=build/gpu/phase4_chunked_nccl/phase4_chunked_nccl
for c in 4096,16,2048 4096,16,512 1024,32,256; do
  IFS=, read -r h l b <<<"$c"
  for s in nccl nccl-sym ce sharded sharded-ce; do
    n=$s-$h-$l-$b
    timeout 90 $MPI $P4 --check --quiet --hidden $h --layers $l --batch $b --sync $s --csv $L/same-work/$n.csv > $L/same-work/$n.log 2>&1 || echo "FAILED rc $?: --sync $s $c"
    grep -h "warning" $L/same-work/$n.log | sort -u | head -3
    rm -f $L/same-work/$n.timeline.*
  done
done
echo "same-work at $(el) s"
python3 - $L/same-work <<'PY2'
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
PY2
T=$L/transport
for t in nvlink shm socket; do
  timeout 90 $MPI $P4 --transport $t --nccl-path --mode comm --check --quiet --hidden 4096 --layers 16 --batch 8 --sweep bucket-mb=1,4,16,64,256,1024 --csv $T/comm-$t.csv > $T/comm-$t.log 2>&1 || echo "FAILED comm $t rc $?"
  for s in nccl sharded; do
    timeout 90 $MPI $P4 --transport $t --nccl-path --check --quiet --hidden 4096 --layers 16 --batch 512 --sync $s --csv $T/step-$s-$t.csv > $T/step-$s-$t.log 2>&1 || echo "FAILED step $s $t rc $?"
  done
  rm -f $T/*.timeline.*
done
timeout 30 $MPI $P4 --transport shm --sync ce --quiet --csv $T/refused.csv > $T/refused-ce-shm.log 2>&1; echo "ce on shm rc $? (2 expected): $(head -c 300 $T/refused-ce-shm.log)"
NT=.nccl-tests/build/all_reduce_perf
for t in nvlink shm socket; do
  case $t in nvlink) e="";; shm) e="NCCL_P2P_DISABLE=1";; socket) e="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo";; esac
  timeout 60 env $e $NT -b 1M -e 1G -f 4 -g 2 -w 5 -n 20 -c 1 > $T/nccl-tests-$t.txt 2>&1 || echo "nccl-tests $t rc $?"
done
echo "transports at $(el) s"
grep -h "nccl_path\|transport" $T/*.meta.json 2>/dev/null | head -5
python3 - $T <<'PY'
import glob, os, sys, pandas as pd
for p in sorted(glob.glob(f"{sys.argv[1]}/comm-*.csv")):
    t = pd.read_csv(p); cols = [c for c in ("bucket_mb", "mode", "time_ms_p50", "busbw_GBps", "transport") if c in t.columns]
    print(os.path.basename(p)); print(t[t["mode"] == "comm"][cols].to_string(index=False))
for p in sorted(glob.glob(f"{sys.argv[1]}/step-*.csv")):
    t = pd.read_csv(p).set_index("mode"); print(os.path.basename(p), " ".join(f"{m}={t.loc[m].time_ms_p50:.3f}" for m in ("compute", "comm", "seq", "overlap", "bound") if m in t.index))
PY
grep -h "^ *1073741824\|^ *268435456\|^ *16777216" $T/nccl-tests-*.txt
cd $OUT && tar czf a.tgz a && rm -rf a
