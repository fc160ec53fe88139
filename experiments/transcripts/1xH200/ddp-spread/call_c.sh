#!/bin/bash
# Device call C (1 GPU): bench_ddp.py --graph after its steps zero as the eager ones do: its GPU tests, then eager
# and captured on two configurations (compute-graph beside the replayed compute-only step).
set -u
L=$OUT/c; mkdir -p $L
finish() { cd $OUT && tar czf c.tgz c && rm -rf c; }
trap finish EXIT
source .gpu_commit_env 2>/dev/null || true
export OVERLAP_GIT_COMMIT OVERLAP_GIT_DIGEST
s=$SECONDS
timeout 200 python3 -m pytest -q tests/python/test_ddp_graph.py > $L/pytest.log 2>&1; echo "pytest rc $? at $((SECONDS-s)) s"; tail -2 $L/pytest.log
R="-m torch.distributed.run --standalone --nproc_per_node 1 -m overlap_bench.bench_ddp --configs 1024,32,256 4096,16,512 --bucket-mb 25 --iters 12 --no-isolated"
timeout 90 python3 $R --csv $L/eager.csv > $L/eager.log 2>&1; echo "eager rc $?"; tail -4 $L/eager.log
timeout 90 python3 $R --graph --csv $L/graph.csv > $L/graph.log 2>&1; echo "graph rc $?"; tail -4 $L/graph.log
grep -h compute-graph $L/eager.csv | cut -d, -f3,7,19-21
