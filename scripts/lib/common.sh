# shellcheck shell=bash
# Shared by scripts/test.sh and scripts/run_all.sh (sourced, not run): finding the tools, installing what is
# missing (as root, through apt and pip), and building with the CMake preset.

OB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The Python tools run in place as modules (python3 -m overlap_bench.report.report), the checkout's package.
export PYTHONPATH="$OB_ROOT${PYTHONPATH:+:$PYTHONPATH}"
OB_APT_PACKAGES="build-essential cmake git openmpi-bin libopenmpi-dev libcli11-dev nlohmann-json3-dev libgtest-dev libsimdjson-dev zlib1g-dev python3 python3-pip"
OB_APT_PYTHON_PACKAGES="python3-pandas python3-matplotlib python3-pytest python3-setuptools python3-wheel python3-ijson python3-jsonschema"

ob_log() { printf '[overlap-bench] %s\n' "$*" >&2; }
ob_die() { printf '[overlap-bench] error: %s\n' "$1" >&2; exit "${2:-1}"; }
# ob_usage SCRIPT: the script's --help, its header comment (every "#" line after the first, up to the first other).
ob_usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$1"; }

# The CUDA toolkit is often installed without being on PATH.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

ob_missing_system() {
  local missing=()
  command -v mpirun >/dev/null 2>&1 || missing+=(openmpi-bin)
  command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-pip)
  if [ -z "${OB_BUILT:-}" ]; then  # what building needs; a built tree (OB_BUILT) runs without it
    command -v cmake >/dev/null 2>&1 || missing+=(cmake)
    command -v c++ >/dev/null 2>&1 || missing+=(build-essential)
    command -v git >/dev/null 2>&1 || missing+=(git)
    command -v mpicxx >/dev/null 2>&1 || missing+=(libopenmpi-dev)
    [ -f /usr/include/CLI/CLI.hpp ] || [ -f /usr/local/include/CLI/CLI.hpp ] || missing+=(libcli11-dev)
    [ -f /usr/include/nlohmann/json.hpp ] || [ -f /usr/local/include/nlohmann/json.hpp ] || missing+=(nlohmann-json3-dev)
    [ -f /usr/include/gtest/gtest.h ] || [ -f /usr/local/include/gtest/gtest.h ] || missing+=(libgtest-dev)
    # The native trace reader (trace_reader/, optional: without these ob-analyze reads traces in Python).
    [ -f /usr/include/simdjson.h ] || [ -f /usr/local/include/simdjson.h ] || missing+=(libsimdjson-dev)
    [ -f /usr/include/zlib.h ] || [ -f /usr/local/include/zlib.h ] || missing+=(zlib1g-dev)
  fi
  echo "${missing[*]}"
}

# The Python modules the main job needs (ob_ensure_dependencies run), those the tests add (test), and the optional
# ones: ijson (the trace reader: ob-analyze and the probe's split alone), hypothesis and hypothesis_jsonschema (the
# structure-aware fuzz tests); without one, what needs it skips, nothing else does. jsonschema checks every
# structured input against its declared schema (overlap_bench/core/validate.py).
OB_PY_RUN="pandas matplotlib jsonschema"
OB_PY_TEST="pytest setuptools wheel"
OB_PY_OPTIONAL="ijson hypothesis hypothesis_jsonschema"
ob_python_has() { local m; for m in "$@"; do python3 -c "import $m" >/dev/null 2>&1 || return 1; done; }
ob_python_ok() {
  local -a modules
  read -ra modules <<<"$OB_PY_RUN ${OB_NEED_TESTS:+$OB_PY_TEST} $OB_PY_OPTIONAL"
  ob_python_has "${modules[@]}"
}

# torch for the probe's and the tuner's tests (pyproject.toml's ddp extra, its supported range): installed as root
# where pip can; where it cannot, said in one line and those tests skip. Once torch is there, OB_REQUIRE_TORCH=1 makes
# a probe test that finds no torch fail instead of skipping.
ob_ensure_torch() {
  local spec
  spec=$(python3 -c 'import tomllib, sys; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["ddp"][0])' \
    "$OB_ROOT/pyproject.toml" 2>/dev/null) || spec=torch
  if ! ob_python_has torch; then
    if [ "$(id -u)" -eq 0 ]; then
      ob_log "installing $spec for the probe's tests (pip; about 3 GB with its CUDA libraries)"
      python3 -m pip install -q "$spec" >/dev/null 2>&1 ||
        ob_log "torch could not be installed ($spec; offline?): the probe's torch tests skip"
    else
      ob_log "torch is not installed: the probe's torch tests skip (python3 -m pip install --user '$spec')"
    fi
  fi
  if ob_python_has torch; then export OB_REQUIRE_TORCH=1; fi
}

# Installs what is missing when root; otherwise prints the exact commands and stops.
ob_ensure_dependencies() {
  local missing
  missing=$(ob_missing_system)
  if [ -n "$missing" ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      ob_log "installing: $missing"
      export DEBIAN_FRONTEND=noninteractive
      local -a packages
      read -ra packages <<<"$missing"
      if ! { apt-get update -qq && apt-get install -y -qq "${packages[@]}" >/dev/null; }; then
        ob_die "apt-get install $missing failed"
      fi
    else
      ob_die "missing packages; install them with:
  sudo apt-get install -y $OB_APT_PACKAGES
  python3 -m pip install --user -r $OB_ROOT/scripts/requirements.txt"
    fi
  fi
  # The tests' own tools (OB_NEED_TESTS; the main job needs none of them): ruff lints the Python (a test that skips
  # without it), installed where pip can, never required.
  if [ -n "${OB_NEED_TESTS:-}" ] && [ "$(id -u)" -eq 0 ] && ! python3 -c 'import ruff' >/dev/null 2>&1; then
    python3 -m pip install -q ruff >/dev/null 2>&1 || ob_log "ruff could not be installed: the lint test will skip"
  fi
  # The shell scripts' lint, shellcheck (a test that skips without it): likewise never required.
  if [ -n "${OB_NEED_TESTS:-}" ] && [ "$(id -u)" -eq 0 ] && ! command -v shellcheck >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -qq shellcheck >/dev/null 2>&1 ||
      ob_log "shellcheck could not be installed: the shell lint test will skip"
  fi
  # clang-format 14 (Debian 12's) checks the C++ layout (a test that skips without it): likewise never required.
  if [ -n "${OB_NEED_TESTS:-}" ] && [ "$(id -u)" -eq 0 ] && ! command -v clang-format-14 >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -qq clang-format-14 >/dev/null 2>&1 ||
      ob_log "clang-format-14 could not be installed: the format test will skip"
  fi
  # clang with libFuzzer (the C++ fuzz test) and atheris (the Python one): likewise never required.
  if [ -n "${OB_NEED_TESTS:-}" ] && [ "$(id -u)" -eq 0 ] && ! command -v clang++ >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -qq clang >/dev/null 2>&1 || ob_log "clang could not be installed: the C++ fuzz test will skip"
  fi
  if [ -n "${OB_NEED_TESTS:-}" ] && [ "$(id -u)" -eq 0 ] && ! python3 -c 'import atheris' >/dev/null 2>&1; then
    python3 -m pip install -q atheris >/dev/null 2>&1 ||
      ob_log "atheris could not be installed (no wheel for this Python?): the Python fuzz test will skip"
  fi
  # Offline (a cluster node), the installs fail: what is required must then be there already, an optional module
  # missing is said and its tools skip.
  local required="$OB_PY_RUN${OB_NEED_TESTS:+ $OB_PY_TEST}"
  if ! ob_python_ok; then
    if [ "$(id -u)" -eq 0 ]; then
      ob_log "installing the Python packages of scripts/requirements.txt"
      python3 -m pip install -q -r "$OB_ROOT/scripts/requirements.txt" >/dev/null 2>&1 ||
        { command -v apt-get >/dev/null 2>&1 && read -ra packages <<<"$OB_APT_PYTHON_PACKAGES" &&
          apt-get install -y -qq "${packages[@]}" >/dev/null 2>&1; } ||
        true
    fi
    local -a modules
    read -ra modules <<<"$required"
    if ! ob_python_has "${modules[@]}"; then
      [ "$(id -u)" -eq 0 ] && ob_die "could not install the Python packages needed: ${required// /, }"
      ob_die "missing Python packages; install them with:
  python3 -m pip install --user -r $OB_ROOT/scripts/requirements.txt
  (or: sudo apt-get install -y $OB_APT_PYTHON_PACKAGES)"
    fi
    ob_python_has ijson ||
      ob_log "ijson is not installed and could not be (offline?): ob-analyze reads large traces only through its" \
             "native reader (trace_reader/), small ones whole"
    ob_python_has hypothesis || ob_log "hypothesis is not installed and could not be (offline?): the fuzz test skips"
  fi
  [ -n "${OB_NEED_TESTS:-}" ] && ob_ensure_torch
  [ -n "${OB_BUILT:-}" ] && return 0  # a built tree: no CMake needed
  local version
  version=$(cmake --version | head -n1 | sed 's/[^0-9.]*//g')
  if [ "$(printf '%s\n3.24\n' "$version" | sort -V | head -n1)" != "3.24" ]; then
    ob_die "CMake $version is too old (3.24 or newer is needed): python3 -m pip install --user 'cmake>=3.24'"
  fi
}

# ob_build PRESET: configure (once) and build with the given CMake preset; prints the build directory. Where OB_BUILT
# names a built tree, that tree is used as it is: ctest sets it for the scripts its tests run, so that none of them
# relinks the binaries that other tests are running beside it.
ob_build() {
  if [ -n "${OB_BUILT:-}" ]; then
    [ -f "$OB_BUILT/CMakeCache.txt" ] || ob_die "OB_BUILT=$OB_BUILT is not a build tree" 2
    echo "$OB_BUILT"
    return
  fi
  local preset=${1:-default} dir="$OB_ROOT/build/${1:-default}"
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    ob_log "configuring ($preset preset)"
    cmake -S "$OB_ROOT" --preset "$preset" >"$OB_ROOT/build/configure-$preset.log" 2>&1 ||
      { cat "$OB_ROOT/build/configure-$preset.log" >&2; ob_die "cmake configure failed"; }
  fi
  ob_log "building ($preset preset, $(nproc) jobs)"
  cmake --build "$dir" -j "$(nproc)" >"$dir/build.log" 2>&1 ||
    { tail -n 60 "$dir/build.log" >&2; ob_die "build failed (full log: $dir/build.log)"; }
  echo "$dir"
}

# Number of usable CUDA devices (0 without a driver or GPU).
ob_gpu_count() {
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true
  else
    echo 0
  fi
}

# Open MPI refuses to run as root without these; tests and run_all use them.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
