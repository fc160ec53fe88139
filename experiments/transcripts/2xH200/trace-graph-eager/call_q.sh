#!/bin/bash
# Device calls Q1-Q5: PyTorch's GPU tests (bench_ddp.py --graph's, after the side stream moved into
# ddp_steps.graph_stream), then the DDP jobs of ../trace-graph traced again by trace_job.py --graph, which now profiles
# one eager step before the replayed ones (its host calls tell DDP's own kernels in the replays). Variables: NPROC
# (ranks, 2), CONFIGS (the six headline configurations), STEPS (traced steps, 3), GTESTS (set: phase 4's GPU tests
# first, from .gpu/default). Q1: NPROC=1 CONFIGS="4096,16,512 1024,32,256"; Q2: GTESTS=1 NPROC=1
# CONFIGS="1024,32,256" (../../1xH200/trace-graph-eager); Q3, Q4: as it stands; Q5: STEPS=8.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
L=$OUT/q; T=$L/traces; mkdir -p $T
finish() { cd $OUT && tar czf q.tgz q && rm -rf q; }
trap finish EXIT
nvidia-smi > $L/machine.txt; nvidia-smi -L | head -2
source .gpu_commit_env; export OVERLAP_GIT_COMMIT OVERLAP_GIT_DIGEST
export PATH=$PWD/.gpu/default/phase4_chunked_nccl:$PATH
if [ -n "${GTESTS:-}" ]; then for t in phase4_gpu_tests phase4_rooms_gpu_tests; do timeout 120 .gpu/default/tests/phase4/$t > $L/$t.log 2>&1; echo "$t rc $?"; grep -E "PASSED|FAILED|SKIPPED" $L/$t.log | head -5; done; fi
s=$SECONDS
timeout 150 python3 -m pytest -q tests/python/test_ddp_graph.py tests/python/test_torch_transformer.py > $L/pytest.log 2>&1; echo "pytest rc $? at $((SECONDS-s)) s"; tail -3 $L/pytest.log
C=${CONFIGS:-"4096,16,512 2048,24,1024 4096,16,2048 1024,32,4096 1024,32,256 4096,16,8192"}
R="torchrun --standalone --nproc_per_node=${NPROC:-2} -m overlap_bench.trace_job --graph --steps ${STEPS:-3} --iters 40 --passes 4 --out $T"
timeout 220 $R --configs $C --bucket-mb 25 64 > $L/ddp.log 2>&1; echo "ddp rc $? at $((SECONDS-s)) s"
timeout 90 ${R/$T/$L/gpt2-xl} --model gpt2-xl --blocks 4 --seq 1024 --bucket-mb 25 > $L/gpt2xl.log 2>&1; echo "gpt2-xl rc $? at $((SECONDS-s)) s"
cat $T/trace_job.csv $L/gpt2-xl/trace_job.csv | cut -c1-250; du -sh $L; grep -h -i "error\|Traceback" $L/*.log | head
