#!/usr/bin/env bash
# Where the system's MPI cannot all-reduce device memory (phase3_mpi_cuda --cuda-aware needs one that can): builds
# Open MPI with CUDA support from its source tarball into PREFIX (Debian's, say: `apt-get source --download-only
# openmpi` once deb-src is enabled), checks that ompi_info reports the CUDA support, and builds phase 3 against it
# in build/cuda-mpi (CUDA architectures: CUDA_ARCH, default native). Needs the CUDA toolkit (CUDA_HOME, default
# /usr/local/cuda); a few minutes on 16 cores. The configure is the smallest that phase 3 needs: no Fortran, OpenSHMEM
# or MPI-IO; PMIx, hwloc and libevent built in (no system version to match); no UCX (built
# without CUDA it would take the device buffers from the ob1 PML and its smcuda BTL, which carry them).
#
# Usage: scripts/cuda_aware_mpi.sh OPENMPI-SOURCE.tar.(xz|gz|bz2) PREFIX [--jobs N] [--logs DIR]
#        scripts/cuda_aware_mpi.sh --built PREFIX [--jobs N] [--logs DIR]
#   --logs DIR  keep the configure, make and cmake logs there (with each step's seconds in steps.log)
#   --built     PREFIX already holds this build, made where there was time for it and moved here (run it with
#               OPAL_PREFIX=PREFIX and PREFIX/lib on LD_LIBRARY_PATH): only its CUDA support is checked and phase 3
#               built against it
# Then:  PREFIX/bin/mpirun -np 2 build/cuda-mpi/phase3_mpi_cuda/phase3_mpi_cuda --device gpu --cuda-aware --check \
#          --strategy thread    (Open MPI 4 is CUDA-aware in blocking collectives only; --share-gpu on one GPU)
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
case "${1:-}" in -h|--help) ob_usage "$0"; exit 0 ;; esac
[ $# -ge 2 ] || ob_die "usage: scripts/cuda_aware_mpi.sh OPENMPI-SOURCE.tar.xz PREFIX [--jobs N] (see --help)" 2
source=$1 prefix=$2 jobs=$(nproc) logs="" built=0
shift 2
if [ "$source" = --built ]; then
  built=1 source=""
  [ -x "$prefix/bin/ompi_info" ] || ob_die "PREFIX: '$prefix' is invalid: --built needs an Open MPI install there" 2
  prefix=$(cd "$prefix" && pwd)
  # Moved from where it was installed: its own libraries are found here, not where their run paths point.
  export OPAL_PREFIX=$prefix LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || ob_die "--jobs: '${2:-}' is invalid: a whole number >= 1" 2
            jobs=$2; shift 2 ;;
    --logs) [ -n "${2:-}" ] || ob_die "--logs: '' is invalid: a directory" 2
            logs=$2; shift 2 ;;
    *) ob_die "unknown option '$1' (see --help)" 2 ;;
  esac
done
if [ "$built" = 0 ]; then
  [[ "$source" =~ \.tar\.(xz|gz|bz2)$ && -f "$source" ]] ||
    ob_die "OPENMPI-SOURCE: '$source' is invalid: an Open MPI source tarball (.tar.xz, .tar.gz or .tar.bz2)" 2
  [ ! -e "$prefix" ] || [ -z "$(ls -A "$prefix")" ] || ob_die "PREFIX: '$prefix' is invalid: it must be new or empty" 2
fi
cuda=${CUDA_HOME:-/usr/local/cuda}
[ -x "$cuda/bin/nvcc" ] || ob_die "no CUDA toolkit at $cuda (set CUDA_HOME)" 2

work=$(mktemp -d)
if [ -n "$logs" ]; then
  mkdir -p "$logs"
  trap 'cp "$work"/*.log "$logs"/ 2>/dev/null; rm -rf "$work"' EXIT
else
  trap 'rm -rf "$work"' EXIT
fi
step() { echo "$1 $(( $(date +%s) - started )) s" >>"$work/steps.log"; started=$(date +%s); }
started=$(date +%s)
if [ "$built" = 0 ]; then
  ob_log "unpacking $source"
  tar -xf "$source" -C "$work"
  step unpack
  tree=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
  [ -x "$tree/configure" ] || ob_die "'$source' holds no configure script at its top" 2
  ob_log "configuring Open MPI with CUDA ($cuda) into $prefix"
  (cd "$tree" && ./configure --prefix="$prefix" --with-cuda="$cuda" --disable-mpi-fortran --disable-oshmem \
     --disable-io-romio --without-ucx --with-pmix=internal --with-hwloc=internal --with-libevent=internal \
     --enable-mca-no-build=btl-uct >"$work/configure.log" 2>&1) || { tail -n 20 "$work/configure.log"; ob_die "configure failed" 3; }
  step configure
  ob_log "building with $jobs jobs"
  (cd "$tree" && make -j "$jobs" install >"$work/make.log" 2>&1) || { tail -n 20 "$work/make.log"; ob_die "make failed" 3; }
  step make
fi
"$prefix/bin/ompi_info" --parsable --all | grep -q '^mca:mpi:base:param:mpi_built_with_cuda_support:value:true$' ||
  ob_die "$prefix/bin/ompi_info does not report CUDA support" 3
ob_log "building phase 3 against it in build/cuda-mpi"
cmake -S "$OB_ROOT" -B "$OB_ROOT/build/cuda-mpi" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-native}" \
  -DMPI_CXX_COMPILER="$prefix/bin/mpicxx" -DMPIEXEC_EXECUTABLE="$prefix/bin/mpirun" >"$work/cmake.log" 2>&1 ||
  { tail -n 20 "$work/cmake.log"; ob_die "cmake failed" 3; }
cmake --build "$OB_ROOT/build/cuda-mpi" -j "$jobs" --target phase3_mpi_cuda >"$work/build.log" 2>&1 ||
  { tail -n 20 "$work/build.log"; ob_die "the phase 3 build failed" 3; }
step phase3
ob_log "done: $prefix/bin/mpirun -np 2 $OB_ROOT/build/cuda-mpi/phase3_mpi_cuda/phase3_mpi_cuda --device gpu --cuda-aware" \
  "--strategy thread --check"
