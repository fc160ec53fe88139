#!/usr/bin/env bash
# The batch files against a real Slurm: a one-node cluster of this host (munged, slurmctld, slurmd) in a temporary
# directory; phase2.sbatch and phase3.sbatch submitted with `sbatch --wait` must succeed and write valid CSVs; the
# GPU batch files pass `bash -n` and `sbatch --test-only`. The daemons are stopped by the PIDs this script started
# and the directory removed, also when a step fails. Without root or apt the test is skipped (exit 77).
#
# Usage: tests/slurm/run_slurm_test.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-${OB_BUILD_DIR:-$root/build/default}}
log() { printf '[slurm-test] %s\n' "$*" >&2; }
skip() { log "skipped: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "needs root to run slurmctld and slurmd"
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  command -v apt-get >/dev/null || skip "slurm-wlm and munge are missing and there is no apt-get"
  log "installing slurm-wlm munge"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null; } ||
    skip "apt-get could not install slurm-wlm munge"
fi
[ -x "$build/phase2_omp_overlap/phase2_omp_overlap" ] || { log "no build in $build"; exit 1; }

tmp=$(mktemp -d /tmp/ob-slurm.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
  local status=$?
  for pid in "${pids[@]+"${pids[@]}"}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]+"${pids[@]}"}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then
    for f in "$tmp"/*.log "$tmp"/out/*.err; do [ -f "$f" ] && { log "--- $f"; tail -n 20 "$f" >&2; }; done
  fi
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT

host=$(hostname -s)
mkdir -p "$tmp"/{munge,state,spool,out}
# munge: a key and a socket of our own, so a system munged (if any) is left alone.
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
munged --force --foreground --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.socket" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munged.log" --seed-file="$tmp/munge/seed" \
  >"$tmp/munged.out" 2>&1 &
pids+=($!)

# Ports of our own (the defaults may be taken), one node with this host's cores.
port=$((20000 + RANDOM % 20000))
cat >"$tmp/slurm.conf" <<CONF
ClusterName=obtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=pmix
EnforcePartLimits=ALL
ReturnToService=2
SchedulerType=sched/builtin
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
GresTypes=gpu
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1024 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF="$tmp/slurm.conf"
for _ in $(seq 50); do [ -S "$tmp/munge/munge.socket" ] && break; sleep 0.1; done
slurmctld -D -i -f "$SLURM_CONF" >"$tmp/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$host" -f "$SLURM_CONF" >"$tmp/slurmd.out" 2>&1 &
pids+=($!)

log "waiting for node $host to be idle"
state=""
for _ in $(seq 120); do
  state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.5
done
[ "$state" = idle ] || { log "node state '$state' after 60 s"; exit 1; }

# submit NAME SBATCH [sbatch options]: runs the job to its end; the job must succeed.
submit() {
  local name=$1 file=$2; shift 2
  log "sbatch --wait $file $*"
  (cd "$root" && OB_BUILD_DIR="$build" OB_OUT="$tmp/out/$name" sbatch --wait --parsable \
     -o "$tmp/out/$name.out" -e "$tmp/out/$name.err" "$@" "scripts/slurm/$file") >"$tmp/out/$name.id" ||
    { log "$name: job failed"; cat "$tmp/out/$name.err" >&2 || true; exit 1; }
}
submit phase2 phase2.sbatch --export=ALL,OB_P2_ARGS=--check\ --iters\ 3\ --chunks\ 4\ --compute-ms\ 2\ --comm-ms\ 1
submit phase3 phase3.sbatch --export=ALL,OB_P3_ARGS=--check\ --device\ cpu\ --iters\ 3\ --batch\ 128\ --in\ 32\ --out\ 16 \
  --ntasks=2 --cpus-per-task=1 --overcommit

python3 - "$tmp/out" <<'PY'
import sys, pathlib
import pandas as pd
out = pathlib.Path(sys.argv[1])
expected = {"phase2": ["compute", "comm", "seq", "overlap", "ideal", "bound"],
            "phase3": ["compute", "comm", "seq", "thread", "nonblocking", "ideal", "bound"]}
for name, modes in expected.items():
    summary = pd.read_csv(out / name / f"{name}.csv")
    assert list(summary["mode"]) == modes, (name, list(summary["mode"]))
    assert (summary["time_ms_p50"] > 0).all(), name
    timeline = pd.read_csv(out / name / f"{name}.timeline.csv")
    assert len(timeline) > 0, name
ranks = pd.read_csv(out / "phase3" / "phase3.csv")["ranks"]
assert (ranks == 2).all(), "phase3 ran on 2 Slurm tasks"
assert (pd.read_csv(out / "phase3" / "phase3.csv").set_index("mode").loc["comm", "wrong"] == 0)
print("[slurm-test] phase2 and phase3 jobs wrote valid CSVs")
PY

# The GPU batch files: syntax, and Slurm's own reading of their directives. This node has no GPU and few cores, so
# Slurm may refuse the resources, but a directive it cannot parse fails the test.
for file in phase1.sbatch phase4.sbatch sweep.sbatch; do
  bash -n "$root/scripts/slurm/$file"
  message=$(cd "$root" && sbatch --test-only "scripts/slurm/$file" 2>&1 || true)
  case "$message" in
    *"to start at"*|*"Requested node configuration is not available"*|*"Invalid generic resource"*|\
    *"More processors requested than permitted"*) ;;
    *) log "$file: unexpected sbatch --test-only answer: $message"; exit 1 ;;
  esac
  log "$file: $message"
done
log "1 passed, 0 failed"
