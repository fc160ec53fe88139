#!/bin/bash
# results/4xH200/predictions-copies, on the CPU machine (no device call): the two sessions' 4-GPU headlines
# predicted again from their 2-GPU calibrations by the planner with its gathers read as copies (rank_rise.cpp), each
# with that session's 4-GPU comm-only sweeps (d2d71bd's, as both were before), checked against the steps measured;
# and the predictions that stand for the next 4-GPU run (85378b9's calibration). Run from the repository root with
# phase4_predict on PATH (build/default/phase4_chunked_nccl).
set -euo pipefail
OUT=results/4xH200/predictions-copies
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
mkdir -p "$W/r/2xH200" "$W/r/4xH200"
cp -r results/2xH200/headline-85378b9 "$W/r/2xH200/"
cp -r results/4xH200/headline-85378b9 results/4xH200/headline-graph results/4xH200/predictions-d2d71bd-graph "$W/r/4xH200/"
python3 -m overlap_bench.packs unpack "$W/r" > /dev/null
C=$W/r/4xH200/predictions-d2d71bd-graph
COMM=("$C/comm-4gpu/comm-nccl.csv" "$C/comm-4gpu/comm-ce.csv")
check() {  # session, 2-GPU calibration, 4-GPU headline
  python3 -m overlap_bench.headline --predict-from "$2" --gpus 4 --comm-from "${COMM[@]}" --out "$W/p-$1" > /dev/null
  python3 -m overlap_bench.headline --analyze "$3" --predictions "$W/p-$1/predictions.csv" --out "$W/a-$1" --gpus 4 \
    --experiment experiments/headline.toml > /dev/null
  cp "$W/a-$1/prediction-check.csv" "$OUT/check-$1.csv"
}
check d2d71bd "$C/calibration-2gpu" "$W/r/4xH200/headline-graph"
check 85378b9 "$W/r/2xH200/headline-85378b9/calibration" "$W/r/4xH200/headline-85378b9"
# The model's structure on its own calibration: the 4-GPU headline from the 4 GPUs' calibration (no rank rise at all).
python3 -m overlap_bench.headline --predict-from "$W/r/4xH200/headline-85378b9/calibration" --gpus 4 --out "$W/p-self" \
  > /dev/null
python3 -m overlap_bench.headline --analyze "$W/r/4xH200/headline-85378b9" --predictions "$W/p-self/predictions.csv" \
  --out "$W/a-self" --gpus 4 --experiment experiments/headline.toml > /dev/null
cp "$W/a-self/prediction-check.csv" "$OUT/check-self-85378b9.csv"
python3 -m overlap_bench.plot_predictions "$OUT/check-self-85378b9.csv" --names "85378b9: 4 GPUs from 4" \
  -o "$OUT/self.png" --csv "$OUT/self-summary.csv"
sed "s#$W/r/#results/#g" "$W/p-85378b9/predictions.csv" > "$OUT/predictions.csv"
python3 -m overlap_bench.plot_predictions "$OUT/check-d2d71bd.csv" "$OUT/check-85378b9.csv" \
  --names "d2d71bd: 4 GPUs from 2 (post hoc)" "85378b9: 4 GPUs from 2 (post hoc)" -o "$OUT/predictions.png" \
  --csv "$OUT/prediction-summary.csv"
python3 experiments/transcripts/4xH200/predictions-copies/rises.py
python3 - "$OUT" <<'PY'
import json, sys, time
from overlap_bench import ob_tool
meta = {"suite": "overlap-bench", "tool": "experiments/transcripts/4xH200/predictions-copies/predict.sh",
        "commit": ob_tool.commit_id(), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "device_call": None, "calibrations": ["results/4xH200/predictions-d2d71bd-graph/calibration-2gpu",
                                              "results/2xH200/headline-85378b9/calibration"],
        "measured": ["results/4xH200/headline-graph", "results/4xH200/headline-85378b9"],
        "comm_from": "results/4xH200/predictions-d2d71bd-graph/comm-4gpu"}
ob_tool.write_text_atomic(f"{sys.argv[1]}/predictions.meta.json", json.dumps(meta, indent=2) + "\n")
PY
