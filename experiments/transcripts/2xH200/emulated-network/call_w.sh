#!/bin/bash
# Device call W (2 GPUs): two emulated nodes of one GPU each, joined by NCCL's socket transport, at NCCL's own
# socket settings against --socket-threads 4 --socks-per-thread 4: the comm-only step of a 64 MiB gradient compared
# in interleaved rounds (ob-compare), the transports NCCL took (--nccl-path), and bench_ddp.py with the same options.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 PYTHONUNBUFFERED=1
source .gpu_commit_env
export PYTHONPATH=$PWD
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
L=$OUT/w; mkdir -p $L
finish() { cd $OUT && find w -name '*.timeline.*' -delete; tar czf w.tgz w && rm -rf w; ls -la $OUT; }
trap finish EXIT
nvidia-smi -L > $L/machine.txt 2>&1
P4=$PWD/.gpu/default/phase4_chunked_nccl/phase4_chunked_nccl
$P4 --version
M="mpirun -n 2 --bind-to none -x NCCL_NVLS_ENABLE"
W="--emulate-nodes 2 --hidden 2048 --layers 4 --batch 256 --iters 10 --warmup 3"
for s in "" "--socket-threads 4 --socks-per-thread 4"; do
  n=$([ -z "$s" ] && echo default || echo tuned)
  timeout 120 $M $P4 $W --mode comm --nccl-path $s --csv $L/path-$n.csv > $L/path-$n.log 2>&1; echo "path $n rc $?"
done
python3 -m overlap_bench.compare --mode comm --compute-mode comm --rounds 4 --seed 61 --deadline 300 \
  --contender "default:comm=$M $P4 $W --mode comm --csv {csv}" \
  --contender "tuned:comm=$M $P4 $W --mode comm --socket-threads 4 --socks-per-thread 4 --csv {csv}" \
  --out $L/compare > $L/compare.log 2>&1
echo "compare rc $? at $(el) s"; grep -E "faster|slower|not resolved" $L/compare.log | tail -2
python3 -c "
import json
for n in ('default', 'tuned'):
    m = json.load(open('$L/path-%s.meta.json' % n))
    env = m.get('environment', {})
    print(n, 'nccl_path', json.dumps(m.get('nccl_path'))[:300], {k: v for k, v in env.items() if 'SOCK' in k or 'HOSTID' in k})
"
timeout 200 python3 -m torch.distributed.run --nproc_per_node 2 -m overlap_bench.bench_ddp --configs 2048,4,256 \
  --emulate-nodes 2 --socket-threads 4 --socks-per-thread 4 --iters 5 --csv $L/ddp-tuned.csv > $L/ddp-tuned.log 2>&1
echo "bench_ddp rc $? at $(el) s"
python3 -c "import pandas as pd; f = pd.read_csv('$L/ddp-tuned.csv'); print(f.filter(['mode', 'time_ms_p50', 'busbw_GBps']).to_string())" 2>&1 | head -8
