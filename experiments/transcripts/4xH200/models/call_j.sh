#!/bin/bash
# Device call J (4 GPUs), at 60676ff (the schedule bound without the overhead lump): issue 51's real models on the
# current planner (corrected by its calibrated plans' steps, every strategy), then the host-paced 1024,32,256 in the
# planner's experiment (its bound rows against their steps, the plan against every strategy).
#  1. per model: the planner calibrated on the 4 GPUs, then ob-compare over 3 rounds of fresh processes: one phase 4
#     process (its default plan and --plan auto), one bench_ddp.py process (DDP at 25, 64, 128 and 256 MB).
#  2. ob-headline --experiment experiments/planner.toml --configs 1024x32x256 in the time left.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
source .gpu_commit_env; export PYTHONPATH=$PWD
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
GPUS=$(nvidia-smi -L | grep -c '^GPU ')
L=$OUT/j; mkdir -p $L
finish() { cd $OUT && find j -name '*.timeline.*' -delete; find j -name '*.trace.json' -delete
  tar czf j.tgz j && rm -rf j; ls -la $OUT; }
trap finish EXIT
{ pwd; nvidia-smi; nvidia-smi topo -m; python3 --version; mpirun --version | head -1; } > $L/machine.txt 2>&1
B=$PWD/.gpu/default; P4=$B/phase4_chunked_nccl/phase4_chunked_nccl
$P4 --version > $L/version.txt 2>&1 || { echo "carried binary failed: $(head -3 $L/version.txt)"; exit 1; }
echo "GPUs $GPUS: $(nvidia-smi -L | head -1); $(head -1 $L/version.txt)"
MPI="mpirun --bind-to none -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS"
model() {  # NAME END_S ARGS...: calibration, then the comparison until END_S into the call
  local name=$1 end=$2; shift 2; local M=$L/$name; mkdir -p $M
  timeout 110 $MPI -np $GPUS $P4 "$@" --calibrate --plan-syncs nccl,ce,sharded-ce --mode compute --iters 3 \
    --csv $M/cal.csv > $M/cal.log 2>&1; echo "$name calibration rc $? at $(el) s"
  [ -f $M/cal.calibration.json ] || return
  python3 -m overlap_bench.compare --out $M/compare --rounds 3 --deadline $((end - $(el))) --timeout 120 \
    --process "p4=$MPI -np $GPUS $P4 $* --calibration $M/cal.calibration.json --sweep plan=caps,auto --plan-syncs nccl,ce,sharded-ce --iters 8 --order-seed {seed} --csv {csv}" \
    --process "ddp=python3 -m torch.distributed.run --nproc_per_node $GPUS -m overlap_bench.bench_ddp $* --model-binary $B/phase4_chunked_nccl/phase4_model --bucket-mb 25 64 128 256 --iters 8 --no-isolated --order-seed {seed} --csv {csv}" \
    --contender "default=@p4[plan=caps]" --contender "planned=@p4[plan=auto]" \
    --contender "ddp-25=@ddp[bucket_mb=25]" --contender "ddp-64=@ddp[bucket_mb=64]" \
    --contender "ddp-128=@ddp[bucket_mb=128]" --contender "ddp-256=@ddp[bucket_mb=256]" \
    --baseline ddp-25 --baseline ddp-25,ddp-64,ddp-128,ddp-256 > $M/compare.log 2>&1
  echo "$name compare rc $? at $(el) s"; grep -h "plan auto" $M/compare/runs/r0-p4.log | head -1 | cut -c1-400
  grep -E "^(default|planned) " $M/compare.log | cut -c1-260 | head -4
}
model llama3-8b 230 --model llama3-8b --blocks 2 --seq 2048
model gpt2-xl 440 --model gpt2-xl --blocks 12 --seq 2048
python3 -m overlap_bench.headline --experiment experiments/planner.toml --configs 1024x32x256 --gpus $GPUS --build $B \
  --out $L/hostpaced --deadline $((575 - $(el))) > $L/hostpaced.log 2>&1
echo "host-paced experiment rc $? at $(el) s"; tail -6 $L/hostpaced.log
