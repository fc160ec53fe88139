# shellcheck shell=bash
# Sourced by every batch file: the build to use, the output folder, an early failure if the build is missing.
# Settings (environment variables, all optional):
#   OB_ROOT       the overlap-bench checkout        (default: the submit directory, $SLURM_SUBMIT_DIR; outside
#                                                    Slurm, the checkout this file is in)
#   OB_BUILD_DIR  the build folder                  (default: $OB_ROOT/build/gpu, from `cmake --preset gpu`, where
#                                                    it exists, else $OB_ROOT/build/default)
#   OB_OUT        where this job writes             (default: $OB_ROOT/results/slurm-<jobid>)
#   OB_MPI        srun's MPI plugin for the MPI phases (default: pmix; `srun --mpi=list` shows the site's)
OB_ROOT=${OB_ROOT:-${SLURM_SUBMIT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}}
if [ -z "${OB_BUILD_DIR:-}" ]; then
  OB_BUILD_DIR=$OB_ROOT/build/default
  [ -d "$OB_ROOT/build/gpu" ] && OB_BUILD_DIR=$OB_ROOT/build/gpu
fi
OB_OUT=${OB_OUT:-$OB_ROOT/results/slurm-${SLURM_JOB_ID:-local}}
OB_MPI=${OB_MPI:-pmix}
# The Python tools run in place as modules (python3 -m overlap_bench.report.report), the checkout's package.
export PYTHONPATH="$OB_ROOT${PYTHONPATH:+:$PYTHONPATH}"
# Since Slurm 22.05 a job step no longer inherits the job's --cpus-per-task: without this every task of `srun` would
# get one CPU, squeezing phase 2's OpenMP threads and the MPI phases' threads onto it.
if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK; fi
# A rank that dies (a signal, a failed check) ends its whole step, and so the job: without it srun leaves the other
# ranks waiting in their next collective until the time limit (seen: one rank killed by SIGSEGV at start-up, the other
# spinning in MPI_Allreduce for 15 minutes). srun's --kill-on-bad-exit, for every step of every batch file.
export SLURM_KILL_BAD_EXIT=${SLURM_KILL_BAD_EXIT:-1}

ob_require_binary() {  # ob_require_binary phaseN_dir/phaseN_binary
  if [ ! -x "$OB_BUILD_DIR/$1" ]; then
    echo "overlap-bench: $OB_BUILD_DIR/$1 is missing: build first (cmake --preset gpu on a GPU node," \
         "cmake --preset default elsewhere), or set OB_BUILD_DIR" >&2
    exit 2
  fi
}
mkdir -p "$OB_OUT"
echo "overlap-bench: job ${SLURM_JOB_ID:-local} on $(hostname -s), writing to $OB_OUT" >&2
