#!/usr/bin/env bash
# Round 3's real transformer shapes on 2 x H200 (issue 35), made in two device calls on nvidia-h200-x2 (one per
# model) by the commands below, from the repository root at the commit their metadata names:
#   mpirun -np 2 phase4_chunked_nccl --model M --blocks N --seq 2048 --iters 10 --warmup 3 --calibrate --plan auto \
#     --plan-syncs nccl,ce --csv M-2048/calibrate.csv
#   phase4_predict --calibration M-2048/calibrate.calibration.json --ranks 2 --gpus-per-node 2 --csv M-2048/predict-2.csv
#   scripts/compare.py --out M-2048/compare --rounds 3 --seed 2026 --baseline ddp25,ddpcap --baseline ddp25 \
#     --also-mode compute --contender p4=... --contender ddp25=... --contender ddpcap=... --contender fsdp2=...
#   (each contender's full command: M-2048/compare/compare.meta.json)
# Blocks: all 48 of gpt2-xl and 8 of llama3-8b's 32, what fits beside bench_ddp's model copies on a 141 GB card.
# Kept of the phase 4 runs' timelines: round 1's compute-only backward events (compare/runs/*.compute-backward.csv.gz).
# This script makes the derived files again from those: steps.csv and steps.png per model, models.csv, README.md.
# Usage: results/2xH200/round3/models/make.sh [PHASE4_PREDICT]   (from anywhere; default: the build's)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
predictor=${1:-$repo/build/default/phase4_chunked_nccl/phase4_predict}
python3 "$here/make_models.py" "$predictor"
python3 "$repo/scripts/md_generate.py" "$here/README.md"
