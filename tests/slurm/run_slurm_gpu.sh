#!/usr/bin/env bash
# The GPU batch files through a real one-node Slurm on a GPU machine, each GPU a gres: munged, slurmctld and slurmd
# from Debian's packages unpacked under a prefix (dpkg -x, never over /), started from a temporary directory and
# stopped by the PIDs this script started. phase1.sbatch, phase4.sbatch and compare.sbatch are submitted as a user
# submits them (sbatch --wait from the checkout), on one GPU (--gpus-per-node=1 --ntasks-per-node=1 on the command
# line, the files unchanged), and a binding job checks that a job sees exactly the GPU its gres names
# (CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS, the UUIDs of the CUDA devices it can open). Everything lands in OUT: the Slurm
# configuration, each job's output and results as on a cluster, sinfo/scontrol, versions and each command.
#
# Slurm finds slurmstepd only where it was built to (/usr/sbin/slurmstepd): where none is installed, that one path is
# a link to the prefix's for the run and removed after. A library the machine lacks (libmunge, liblua, ...) is taken
# from the .debs; one it has is its own.
#
# Usage: tests/slurm/run_slurm_gpu.sh DEBS BUILD OUT
#   DEBS   a folder of .deb files: munge, libmunge2, slurmctld, slurmd, slurm-client, slurm-wlm-basic-plugins and
#          the libraries they need (apt-get download on Debian 12 / Ubuntu), or "system" for an installed Slurm
#   BUILD  the build folder (phase1_cuda_baseline, phase4_chunked_nccl in it)
#   OUT    a new folder for the results
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
log() { printf '[slurm-gpu] %s\n' "$*" >&2; }
case "${1:-}" in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
[ $# -eq 3 ] || { log "usage: tests/slurm/run_slurm_gpu.sh DEBS BUILD OUT (see --help)"; exit 2; }
debs=$1 build=$(cd "$2" && pwd) out=$3
[ "$(id -u)" -eq 0 ] || { log "needs root (slurmd runs jobs as their users)"; exit 2; }
[ -x "$build/phase1_cuda_baseline/phase1_cuda_baseline" ] || { log "BUILD: '$build' has no phase 1"; exit 2; }
[ ! -e "$out" ] || { log "OUT: '$out' exists"; exit 2; }
gpus=(/dev/nvidia[0-9]*)
[ -e "${gpus[0]}" ] || { log "no /dev/nvidiaN: no GPU to make a gres of"; exit 2; }
mkdir -p "$out"/jobs
out=$(cd "$out" && pwd)

tmp=$(mktemp -d /var/tmp/ob-slurm-gpu.XXXXXX)
chmod 755 "$tmp"
pids=() stepd_link=""
cleanup() {
  local status=$?
  if [ -n "${SLURM_CONF:-}" ]; then scancel --quiet --partition=gpu 2>/dev/null || true; fi
  for pid in "${pids[@]+"${pids[@]}"}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]+"${pids[@]}"}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  cp "$tmp"/*.log "$tmp"/*.conf "$out/" 2>/dev/null || true
  if [ -n "$stepd_link" ]; then rm -f "$stepd_link"; fi
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT

if [ "$debs" = system ]; then
  prefix=""
  plugins=$(dirname "$(find /usr/lib* -name 'select_cons_tres.so' -print -quit)")
else
  prefix=$tmp/root
  for deb in "$debs"/*.deb; do dpkg -x "$deb" "$prefix"; done
  plugins=$(dirname "$(find "$prefix" -name 'select_cons_tres.so' -print -quit)")
  # the prefix's libraries where the machine has none of that name; the machine's own otherwise
  mkdir -p "$tmp/libs"
  known=$(ldconfig -p | awk '{print $1}')
  for lib in "$prefix"/lib/x86_64-linux-gnu/*.so.* "$prefix"/usr/lib/x86_64-linux-gnu/*.so.*; do
    [ -e "$lib" ] || continue
    name=$(basename "$lib")
    grep -qxF "$name" <<<"$known" || ln -sf "$lib" "$tmp/libs/$name"
  done
  export PATH="$prefix/usr/bin:$prefix/usr/sbin:$PATH"
  export LD_LIBRARY_PATH="$plugins:$tmp/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if [ ! -e /usr/sbin/slurmstepd ]; then
    ln -s "$prefix/usr/sbin/slurmstepd" /usr/sbin/slurmstepd
    stepd_link=/usr/sbin/slurmstepd
  fi
fi
{ echo "prefix: ${prefix:-none (the installed Slurm)}"; echo "plugins: $plugins"; slurmctld -V; munged --version 2>&1 | head -1
  echo "libraries from the .debs: $(find "$tmp/libs" -mindepth 1 -printf '%f ' 2>/dev/null)"; nvidia-smi -L || true; } >"$out/versions.txt" 2>&1

mkdir -p "$tmp"/{munge,state,spool}
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
munged --force --foreground --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.socket" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munged.log" --seed-file="$tmp/munge/seed" \
  >"$tmp/munged.out.log" 2>&1 &
pids+=($!)

node=$(hostname -s)  # slurmctld runs only where the host's name is its SlurmctldHost
port=$((20000 + RANDOM % 20000))
cpus=$(( $(nproc) < 32 ? 32 : $(nproc) ))  # at least the batch files' shape (config_overrides takes it as declared)
memory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
cat >"$tmp/slurm.conf" <<CONF
ClusterName=obgpu
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
MailProg=/bin/true
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/munge.socket
CredType=cred/munge
PluginDir=$plugins
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=pmix
ReturnToService=2
SchedulerType=sched/builtin
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
GresTypes=gpu
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory Gres=gpu:${#gpus[@]} State=UNKNOWN
PartitionName=gpu Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
{ echo "AutoDetect=off"; for g in "${gpus[@]}"; do echo "Name=gpu File=$g"; done; } >"$tmp/gres.conf"
export SLURM_CONF=$tmp/slurm.conf
for _ in $(seq 50); do [ -S "$tmp/munge/munge.socket" ] && break; sleep 0.1; done
slurmctld -D -i -f "$SLURM_CONF" >"$tmp/slurmctld.out.log" 2>&1 &
pids+=($!)
slurmd -D -N "$node" -f "$SLURM_CONF" >"$tmp/slurmd.out.log" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 120); do
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || { log "a daemon ended: $(tail -n 2 "$tmp"/*.out.log)"; exit 1; }; done
  state=$(sinfo -h -p gpu -N -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.5
done
[ "$state" = idle ] || { log "node state '$state' after 60 s: $(sinfo -h -R 2>&1)"; exit 1; }
{ sinfo -N -o "%N %T %c %m %G"; scontrol show node "$node"; } >"$out/sinfo.txt" 2>&1
log "one node, ${#gpus[@]} GPU gres: $(sinfo -h -N -o '%N %T %G')"

# submit NAME FILE [sbatch options]: as a user submits it, from the checkout; waits for its end (at most 5 minutes,
# pending ones too)
failed=0
submit() {
  local name=$1 file=$2; shift 2
  echo "OB_OUT=$out/jobs/$name sbatch --wait --time=5 -o $name.out -e $name.err $* $file" >>"$out/commands.txt"
  if (cd "$root" && OB_BUILD_DIR="$build" OB_OUT="$out/jobs/$name" timeout 330 sbatch --wait --parsable --time=5 \
        -o "$out/jobs/$name.out" -e "$out/jobs/$name.err" "$@" "$file") >"$out/jobs/$name.id" 2>&1; then
    log "$name: job $(head -1 "$out/jobs/$name.id") finished"
  else
    log "$name: failed: $(tail -n 3 "$out/jobs/$name.err" 2>/dev/null | tr '\n' ' ')"
    failed=$((failed + 1))
  fi
}
one_gpu=(--gpus-per-node=1 --ntasks-per-node=1)
# The binding: the job's gres against what it sees
cat >"$tmp/binding.sbatch" <<'JOB'
#!/usr/bin/env bash
#SBATCH --job-name=ob-binding
set -euo pipefail
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset} SLURM_JOB_GPUS=${SLURM_JOB_GPUS:-unset} SLURM_GPUS_ON_NODE=${SLURM_GPUS_ON_NODE:-unset}"
srun python3 -c "import torch; print('cuda sees', torch.cuda.device_count(), *('GPU-%s' % torch.cuda.get_device_properties(i).uuid for i in range(torch.cuda.device_count())))"
srun bash -c 'echo "step: CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset} SLURM_STEP_GPUS=${SLURM_STEP_GPUS:-unset}"'
JOB
cp "$tmp/binding.sbatch" "$out/binding.sbatch"
submit binding "$tmp/binding.sbatch" --gpus=1 --ntasks=1
submit phase1 scripts/slurm/phase1.sbatch --export=ALL,OB_P1_ARGS="${OB_P1_ARGS:---check}"
submit phase4 scripts/slurm/phase4.sbatch "${one_gpu[@]}" --export=ALL,OB_P4_ARGS="${OB_P4_ARGS:---check}"
submit compare scripts/slurm/compare.sbatch "${one_gpu[@]}" \
  --export=ALL,OB_COMPARE_ARGS="${OB_COMPARE_ARGS:---rounds 3 --baseline ddp25 --deadline 200}"
sacct_state=$(squeue -h 2>&1 | wc -l)
log "jobs still queued: $sacct_state; failed: $failed"

python3 - "$out" <<'PY'
import json, pathlib, re, subprocess, sys
out = pathlib.Path(sys.argv[1])
lines = (out / "jobs" / "binding.out").read_text().splitlines()
seen = dict(re.findall(r"(\w+)=(\S+)", lines[0]))
uuids = next(line.split()[3:] for line in lines if line.startswith("cuda sees"))
every = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"], capture_output=True,
                       text=True, check=True).stdout.split("\n")
named = {line.split(",")[0].strip(): line.split(",")[1].strip() for line in every if line.strip()}
bound = seen["SLURM_JOB_GPUS"]
checks = {"the job was given one GPU": len(bound.split(",")) == 1,
          "CUDA_VISIBLE_DEVICES names the gres's GPU": seen["CUDA_VISIBLE_DEVICES"] in ("0", named.get(bound, "?")),
          "the job sees exactly one GPU": len(uuids) == 1,
          "and it is the GPU its gres names": uuids == [named.get(bound)]}
for name, ok in checks.items():
    print(f"{'ok' if ok else 'FAILED'}: {name}")
(out / "binding.json").write_text(json.dumps({"seen": seen, "uuids_seen": uuids, "gres_gpu": bound,
                                              "gpu_uuid": named.get(bound), "checks": checks}, indent=2) + "\n")
sys.exit(0 if all(checks.values()) else 1)
PY
[ "$failed" -eq 0 ] || exit 1
log "binding, phase1, phase4 and compare jobs finished; results in $out"
