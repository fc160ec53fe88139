#!/bin/bash
# Device call E (1 GPU): why phase 4's replayed compute-only step is slower than PyTorch's on the small-hidden
# configurations: the cost of an event recorded after every layer inside a graph (PyTorch, with and without), beside
# phase 4's own compute-only step under --graph on one rank.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
L=$OUT/e; mkdir -p $L
finish() { cd $OUT && tar czf e.tgz e && rm -rf e; }
trap finish EXIT
C="1024,32,256 2048,24,1024 1024,32,4096 4096,16,512"
timeout 120 python3 .device/marks.py $C 2>&1 | tee $L/marks.log
B=$PWD/.gpu/default/phase4_chunked_nccl/phase4_chunked_nccl
for c in $C; do IFS=, read h l b <<< "$c"
  timeout 60 mpirun --bind-to none -np 1 $B --hidden $h --layers $l --batch $b --mode compute --graph --iters 30 --csv $L/p4-$h-$l-$b.csv > $L/p4-$h-$l-$b.log 2>&1
  echo "p4 $c rc $? $(grep -h '^[a-z].*,compute,' $L/p4-$h-$l-$b.csv | cut -d, -f7 | head -1)"
done
head -2 $L/p4-1024-32-256.csv | cut -c1-200
