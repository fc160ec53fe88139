#!/usr/bin/env bash
# Round 3's real transformer shapes on 2 x H200 (issue 35), each folder made on one warm nvidia-h200-x2 machine by
# the commands below, from the repository root at the commit its metadata names (T: the transport, nvlink if not named):
#   mpirun -np 2 phase4_chunked_nccl --model M --blocks N --seq S --iters 10 --warmup 3 --transport T --calibrate \
#     --plan auto --plan-syncs nccl,ce (nccl alone off NVLink) --csv FOLDER/calibrate.csv
#   phase4_predict --calibration FOLDER/calibrate.calibration.json --ranks 2 --gpus-per-node 2 \
#     --csv FOLDER/predict-2.csv
#   scripts/compare.py --out FOLDER/compare --rounds R --seed 2026 --baseline ddp25,ddpcap --baseline ddp25 \
#     --also-mode compute --contender p4=... --contender ddp25=... --contender ddpcap=... --contender fsdp2=...
#   (each contender's full command: FOLDER/compare/compare.meta.json; off NVLink PyTorch ran with the NCCL variables
#   phase 4's --transport sets, in its environment)
# Blocks: on NVLink at seq 2048 all 48 of gpt2-xl and 8 of llama3-8b's 32, what fits beside bench_ddp's model copies
# on a 141 GB card; at seq 4096, 12 of gpt2-xl's; over host memory 8 and over sockets 4, so that the slower links'
# calibration and rounds fit the device time.
# Every run: phase 4 with its one-pass softmax (model/attention_softmax.cu), PyTorch with scripts/causal_softmax.py's
# fused one; each run's commit and rounds: models.csv.
# The llama3-8b NVLink runs and gpt2-xl-2048-shm: built with OVERLAP_GIT_COMMIT=b6302edb2409 from a tree that held
# bee6122's watchdog change, so they name "b6302edb2409-dirty" with bee6122's source_digest c7fde2508ebacfed.
# Calibrated in one device call and compared in the next (ob-compare --deadline, p4 with --calibration, the
# calibration kept on the machine in between): llama3-8b at seq 4096, llama3-8b-2048-shm (the deadline let 3 of the 4
# rounds asked run) and gpt2-xl-2048-socket (5 rounds; the first call, which calibrated, also compared, but its
# deadline let only 2 of 3 rounds run: kept in gpt2-xl-2048-socket/first-call/, its per-run files not kept).
# The runs these replaced (phase 4's older multi-pass softmax, and PyTorch's softmax from its own ops, with extra
# passes over the scores) are in git history: git log --diff-filter=D -- results/2xH200/round3/models
# compute-gap/: three torch.profiler runs of PyTorch's compute-only step on one H200 (profile_*.py, as they ran, with
# gpu_shape.json from phase4_model --model gpt2-xl --shape-json, kept here as gpt2-xl.shape.json; their output in
# profile_*.txt): two before scripts/causal_softmax.py, profile_fused.py after it.
# Kept of the phase 4 runs' timelines: round 1's compute-only backward events (compare/runs/*.compute-backward.csv.gz).
# This script makes the derived files again from those: steps.csv and steps.png per folder, models.csv,
# compute-gap/gap.csv, gap_fused.csv, steps.csv and lm_head.csv, README.md.
# Usage: results/2xH200/round3/models/make.sh [PHASE4_PREDICT]   (from anywhere; default: the build's)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
predictor=${1:-$repo/build/default/phase4_chunked_nccl/phase4_predict}
python3 "$here/make_models.py" "$predictor"
python3 "$here/compute-gap/make_gap.py"
python3 "$repo/scripts/md_generate.py" "$here/README.md"
