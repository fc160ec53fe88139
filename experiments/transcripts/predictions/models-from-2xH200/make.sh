#!/usr/bin/env bash
# Predictions for real transformer shapes (issue 35) from the 2 x H200 calibration of 4096,16,2048 (2048 rows per GEMM,
# the tokens per GPU of seq 2048 x 1): the compute ESTIMATED from its GEMM rates, the communication as calibrated
# (METRICS.md, "A model's estimate"). Per model and sequence length: predict-MODEL-SEQ.csv (2 to 1024 GPUs, ib400 and
# eth100 between nodes of 8), steps-MODEL-SEQ.csv and .png (each backward step with the buckets of the best plan on
# 2 GPUs and DDP's recommended cap), then models.csv (make_table.py) for the README.
# Usage: results/predictions/models-from-2xH200/make.sh [PHASE4_PREDICT]   (from anywhere; default: the build's)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
predictor=${1:-$repo/build/default/phase4_chunked_nccl/phase4_predict}
calibration=$repo/results/2xH200/planner/planner-4096-16-2048.calibration.json
for model in gpt2-xl llama3-8b; do
  for seq in 2048 4096; do
    python3 "$repo/scripts/predict.py" "$calibration" --predictor "$predictor" --model "$model" --seq "$seq" \
      --csv "$here/predict-$model-$seq.csv" --layers-csv "$here/steps-$model-$seq.csv" \
      --layers-figure "$here/steps-$model-$seq.png" > "$here/predict-$model-$seq.log"
  done
done
python3 "$here/make_table.py" "$predictor"
python3 "$repo/scripts/md_generate.py" "$here/README.md"
