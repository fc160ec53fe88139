#!/usr/bin/env bash
# The suite's main job: builds overlap-bench (Release preset) if needed, runs every phase this machine can run
# with its defaults, writes everything to results/runs/<host>-<date-time>/, makes the report and plots (phase 4's
# power over time where NVML reads it: --power), and prints a summary. Phases that need hardware this machine lacks
# are listed as skipped, with the reason.
#
# Usage: scripts/run_all.sh [--quick] [--out DIR] [--list]
#   --quick   a run of under a minute on a 2-core machine (few iterations, small sizes)
#   --out DIR write there instead of results/runs/<host>-<date-time>/
#   --list    build, then only say which phases would run
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

quick=0 out="" list=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --list) list=1; shift ;;
    -h|--help) ob_usage "$0"; exit 0 ;;
    *) ob_die "unknown option '$1' (see --help)" 2 ;;
  esac
done

ob_ensure_dependencies
mkdir -p "$OB_ROOT/build"
build=$(ob_build default)
gpus=$(ob_gpu_count)
[ -n "$out" ] || out="$OB_ROOT/results/runs/$(hostname -s)-$(date +%Y%m%d-%H%M%S)"
if [ "$list" = 0 ]; then
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
fi

# name|binary|needs (cpu, gpu)|MPI ranks (0: no mpirun)|arguments
if [ "$quick" = 1 ]; then
  iters="--iters 3 --warmup 1"
  p2_args="$iters --chunks 6 --compute-ms 2 --comm-ms 1"
  p2_real_args="$iters --workload real --chunks 6 --chunk-rows 32 --hidden 128"
  p3_args="$iters --batch 256 --in 128 --out 128"
  p1_args="$iters --batch 512 --in 256 --out 256"
  p4_args="$iters --hidden 1024 --layers 8 --batch 256"
else
  iters=""
  p2_args=""
  p2_real_args="--workload real"
  # Phase 3 where compute ~ communication: the backward chunks sized to a 4 MiB all-reduce (--batch auto).
  p3_args="--batch auto --in 512 --out 2048 --chunks 16 --iters 30"
  p1_args=""
  p4_args=""
fi
# Phase 3 runs 2 ranks: one GPU each where there are two. On one GPU with cores to spare (4 or more) both ranks
# compute on it, sharing it (--share-gpu): on a GPU node the step worth measuring is the GPU's (GEMMs on the GPU,
# each chunk staged to the host and all-reduced by MPI while the next computes), and the two ranks time-slice its
# compute in every mode alike, compute-only included, so each mode is still measured against the same work. The
# summary says which it chose and why.
if [ "$gpus" -ge 2 ]; then
  p3_args="$p3_args --device gpu"; p3_where="one GPU per rank"
elif [ "$gpus" -eq 1 ] && [ "$(nproc)" -ge 4 ]; then
  p3_args="$p3_args --device gpu --share-gpu"
  p3_where="sharing the one GPU (--share-gpu), chosen over the CPU: on a GPU node the GPU's step is the one to"
  p3_where="$p3_where measure, and the two ranks time-slice its compute in every mode alike, compute-only included"
  p3_where="$p3_where (the same work), with $(nproc) cores left to their host threads and MPI"
else
  p3_args="$p3_args --device cpu"; p3_where="on the CPU ($gpus GPU(s) for 2 ranks)"
  [ "$gpus" -eq 1 ] && p3_where="$p3_where: $(nproc) cores leave no spare core for the host side of a shared GPU"
fi
phases=(
  "phase2-synthetic|phase2_omp_overlap/phase2_omp_overlap|cpu|0|$p2_args --check"
  "phase2-real|phase2_omp_overlap/phase2_omp_overlap|cpu|0|$p2_real_args --check"
  "phase3|phase3_mpi_cuda/phase3_mpi_cuda|cpu|2|$p3_args --check"
  "phase1|phase1_cuda_baseline/phase1_cuda_baseline|gpu|0|$p1_args --check"
  "phase4|phase4_chunked_nccl/phase4_chunked_nccl|gpu|$gpus|$p4_args --power --check"
)

ob_log "machine: $(nproc) cores, $gpus GPU(s); results in $out"
[ "$list" = 1 ] || ob_log "phase 3: 2 MPI ranks $p3_where"
# A machine already busy slows every mode unevenly: say so before the numbers, so they are read with that in mind.
load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
busy_note=""
if awk -v l="$load" -v c="$(nproc)" 'BEGIN { exit !(l > 0.5 * c) }'; then
  busy_note="warning: the machine was busy at the start (load average $load on $(nproc) cores): timings vary more, and a compute-only run slowed by other load can make overlap look better or worse than it is"
  ob_log "$busy_note"
fi
declare -a ran=() skipped=() failed=()
for entry in "${phases[@]}"; do
  IFS='|' read -r name binary needs ranks args <<<"$entry"
  if [ ! -x "$build/$binary" ]; then
    skipped+=("$name: not built (no CUDA compiler at configure time)")
    continue
  fi
  if [ "$needs" = gpu ] && [ "$gpus" -eq 0 ]; then
    skipped+=("$name: no CUDA device")
    continue
  fi
  if [ "$list" = 1 ]; then
    [ "$ranks" -gt 0 ] && on=" on $ranks MPI ranks" || on=""
    [ "$name" = phase3 ] && on="$on, $p3_where"
    ob_log "would run $name$on: $binary $args"
    continue
  fi
  ob_log "running $name"
  status=0
  read -ra options <<<"$args"  # the table's options, one word each
  launcher=()
  if [ "$ranks" -gt 0 ]; then
    # Each rank gets a compute thread and a communication thread; --bind-to none lets them float over the cores.
    launcher=(mpirun -np "$ranks" --oversubscribe --bind-to none -x OMP_NUM_THREADS=2)
    if [ $((ranks * 2)) -gt "$(nproc)" ]; then
      # More threads than cores: spinning OpenMP and MPI waits would steal the cores the other rank computes on
      # (seen on 2 cores: the thread strategy 27x slower). Wait passively instead.
      launcher+=(-x OMP_WAIT_POLICY=passive --mca mpi_yield_when_idle 1)
    fi
  fi
  "${launcher[@]}" "$build/$binary" "${options[@]}" --quiet --csv "$out/$name.csv" >"$out/$name.log" 2>&1 || status=$?
  case "$status" in
    0) ran+=("$name") ;;
    77) skipped+=("$name: $(tail -n 1 "$out/$name.log")") ;;
    *) failed+=("$name (exit $status, log: $out/$name.log)"); tail -n 5 "$out/$name.log" >&2 ;;
  esac
done

# On 2 GPUs or more, phase 4's planner: a calibration measured once (every all-reduce strategy), then the plan it
# chooses against the default plan (25 MiB buckets, --sync nccl) as fresh processes in interleaved rounds
# (overlap_bench/compare/compare.py), their ratio with its interval.
planner_rounds=$([ "$quick" = 1 ] && echo 3 || echo 5)
if [ "$gpus" -ge 2 ] && [ "$list" = 1 ]; then
  ob_log "would run phase 4's planner on $gpus MPI ranks: --calibrate, then its plan against the default in" \
         "$planner_rounds interleaved rounds"
fi
planner_sentence=""
if [ "$gpus" -ge 2 ] && [ "$list" = 0 ] && [[ " ${ran[*]+"${ran[*]}"} " == *" phase4 "* ]]; then
  ob_log "phase 4's planner: calibrating, then its plan against the default in $planner_rounds interleaved rounds"
  read -ra p4_options <<<"$p4_args"
  p4=(mpirun -np "$gpus" --bind-to none "$build/phase4_chunked_nccl/phase4_chunked_nccl" "${p4_options[@]}" --quiet)
  # The strategies it chooses among: the one list experiments/headline.toml declares (planned_syncs); an installed
  # copy without experiments/ plans --sync alone.
  plan_syncs=$(python3 -m overlap_bench.core.experiment_lists planned_syncs) || plan_syncs=""
  syncs=()
  [ -z "$plan_syncs" ] || syncs=(--plan-syncs "$plan_syncs")
  # A contender is a command line ob-compare gives bash: each word quoted for it (printf %q), a path with a space or
  # a quote in it stays one word.
  p4_line=$(printf '%q ' "${p4[@]}")
  planned_line=$(printf '%q ' "${p4[@]}" ${syncs[@]+"${syncs[@]}"})
  calibration=$(printf '%q' "$out/planner-calibrate.calibration.json")
  if "${p4[@]}" ${syncs[@]+"${syncs[@]}"} --calibrate --csv "$out/planner-calibrate.csv" >"$out/planner-calibrate.log" \
       2>&1 &&
     python3 -m overlap_bench.compare.compare --out "$out/planner" --rounds "$planner_rounds" --baseline default \
       --contender "default=$p4_line--csv {csv}" \
       --contender "planned=$planned_line--plan auto --calibration $calibration --csv {csv}" \
       >"$out/planner.log" 2>&1; then
    planner_sentence=$(grep -E ' is (faster than|slower than|not resolved against) ' "$out/planner.log" || true)
    ran+=("planner")
  else
    failed+=("planner (logs: $out/planner-calibrate.log, $out/planner.log)")
    tail -n 5 "$out/planner.log" "$out/planner-calibrate.log" >&2 2>/dev/null || true
  fi
fi

if [ "$list" = 1 ]; then
  for s in "${skipped[@]+"${skipped[@]}"}"; do ob_log "would skip $s"; done
  exit 0
fi

if [ -f "$OB_ROOT/overlap_bench/report/report.py" ] && [ "${#ran[@]}" -gt 0 ]; then
  ob_log "writing the report and plots"
  python3 -m overlap_bench.report.report "$out" >"$out/report.log" 2>&1 ||
    { failed+=("report (log: $out/report.log)"); tail -n 5 "$out/report.log" >&2; }
fi

echo
echo "overlap-bench summary ($(hostname -s), $(date -u +%Y-%m-%dT%H:%M:%SZ))"
[ -z "$busy_note" ] || echo "$busy_note"
for name in "${ran[@]+"${ran[@]}"}"; do
  echo "== $name"
  if [ "$name" = planner ]; then
    echo "phase 4's planner (its calibration: $out/planner-calibrate.calibration.json), the planned step against the" \
      "default one over $planner_rounds interleaved rounds (fresh processes; $out/planner/compare.csv):"
    echo "${planner_sentence:-(no verdict: see $out/planner.log)}"
    python3 - "$out/planner/runs/r0-planned.csv" <<'PY' || true
import sys, pandas as pd
row = pd.read_csv(sys.argv[1]).set_index("mode").loc["overlap"]
print(f"the planner chose --sync {row['sync']} with {int(row['buckets'])} buckets"
      f" (the default: --sync nccl, 25 MiB buckets after a 1 MiB first)")
PY
    continue
  fi
  [ "$name" = phase3 ] && echo "phase3 ran 2 MPI ranks $p3_where"
  python3 -m overlap_bench.report.verdict "$out/$name.csv" --cores "$(nproc)" 2>&1 || true
  grep -E '^(#|  )' "$out/$name.log" | grep -v '^# \(summary\|timeline\)' || true
done
if [ "$(nproc)" -le 2 ] && [[ " ${ran[*]+"${ran[*]}"} " == *" phase3 "* ]]; then
  echo "phase3 on $(nproc) cores: each rank shares its core between compute and MPI, so what hides is what OSU's" \
    "MPI_Test probes hide (about half: docs/USAGE.md, "Phase 3 against the OSU Micro-Benchmarks"), not what a progress thread on a spare core hides"
fi
for s in "${skipped[@]+"${skipped[@]}"}"; do echo "skipped: $s"; done
for f in "${failed[@]+"${failed[@]}"}"; do echo "FAILED: $f"; done
echo "results: $out${ran[0]+ (report: $out/report.md)}"
[ "${#failed[@]}" -eq 0 ]
