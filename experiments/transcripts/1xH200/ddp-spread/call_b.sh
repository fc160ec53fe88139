#!/bin/bash
# Device call B (1 GPU): bench_ddp.py --graph (new): its GPU tests, then eager against captured DDP as fresh
# processes in turn (4 rounds), the host-paced configurations at two caps, to see the spread between processes;
# one transformer (gpt2, 2 blocks) under --graph.
set -u
L=$OUT/b; mkdir -p $L
finish() { cd $OUT && tar czf b.tgz b && rm -rf b; }
trap finish EXIT
nvidia-smi -L | head -1
source .gpu_commit_env 2>/dev/null || true
export OVERLAP_GIT_COMMIT OVERLAP_GIT_DIGEST
s=$SECONDS
timeout 200 python3 -m pytest -q tests/python/test_ddp_graph.py > $L/pytest.log 2>&1; echo "pytest rc $? at $((SECONDS-s)) s"; tail -3 $L/pytest.log
C="1024,32,256 2048,24,1024 1024,32,4096 4096,16,512"
R="-m torch.distributed.run --standalone --nproc_per_node 1 -m overlap_bench.bench_ddp --configs $C --bucket-mb 25 128 --iters 12 --passes 2 --no-isolated"
for r in 1 2 3 4; do
  for v in $(printf 'eager\ngraph\n' | shuf); do
    G=""; [ $v = graph ] && G="--graph"
    timeout 90 python3 $R $G --order-seed $r --csv $L/$v-$r.csv > $L/$v-$r.log 2>&1
    echo "round $r $v rc $? at $((SECONDS-s)) s"
  done
done
PATH=$PWD/.gpu/default/phase4_chunked_nccl:$PATH timeout 120 python3 -m torch.distributed.run --standalone --nproc_per_node 1 -m overlap_bench.bench_ddp --model gpt2 --blocks 2 --seq 1024 --iters 8 --graph --csv $L/gpt2.csv > $L/gpt2.log 2>&1; echo "gpt2 rc $? at $((SECONDS-s)) s"; tail -4 $L/gpt2.log
tail -6 $L/graph-1.log
