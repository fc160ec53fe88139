"""Coverage-guided fuzzing of the C++ readers (issue 83): libFuzzer targets (tests/fuzz/*.cpp) over phase 4's option
checks (fuzz_phase4_options), the native Kineto reader (fuzz_trace_reader) and its columns file (fuzz_columns_file),
built here with clang under AddressSanitizer and UBSan (tests/fuzz/CMakeLists.txt: the libraries they link, each
compiled as one unit at -O0, into the build tree's fuzz-clang folder, kept between runs; OB_FUZZ_BUILD_DIR names
another; Ninja where it is installed) and run side by side, each for a bounded time (-max_total_time,
-rss_limit_mb=2048), from the seeds of tests/fuzz/corpus/<target>/ copied to a temporary folder (what it finds grows
the copy, never the tree). A crash, a sanitizer's report, a leak, an exception other than the reader's own refusal
or a hang fails the test with its input. Without clang (or its libFuzzer runtime) the tests skip in one line.
OB_FUZZ_SECONDS sets each target's time (default 12: the fuzz tests together stay within five minutes on two loaded
cores; the build takes about two minutes of CPU from nothing)."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import REPO

SECONDS = int(os.environ.get("OB_FUZZ_SECONDS_NATIVE", os.environ.get("OB_FUZZ_SECONDS", "12")))
TARGETS = {"fuzz_phase4_options": "phase4_options", "fuzz_trace_reader": "trace_reader",
           "fuzz_columns_file": "columns_file"}


def clang():
    return shutil.which("clang++") or shutil.which("clang++-14")


def generator(build):
    """The build folder's own generator once configured (CMake refuses another); else Ninja where it is installed
    (it keeps both cores busy across the libraries; Make waits for each library before the next)."""
    cache = build / "CMakeCache.txt"
    if cache.is_file():
        for line in cache.read_text(errors="replace").splitlines():
            if line.startswith("CMAKE_GENERATOR:"):
                return []
    return ["-G", "Ninja"] if shutil.which("ninja") else []


@pytest.fixture(scope="module")
def built():
    """The fuzz targets' folder, configured and built with clang once a session (incrementally after the first)."""
    compiler = clang()
    if not compiler:
        pytest.skip("clang++ is not installed (scripts/lib/common.sh installs it as root): the C++ fuzz tests skip")
    build = pathlib.Path(os.environ.get("OB_FUZZ_BUILD_DIR", pathlib_build() / "fuzz-clang"))
    configure = ["cmake", "-S", str(REPO / "tests" / "fuzz"), "-B", str(build), *generator(build),
                 f"-DCMAKE_CXX_COMPILER={compiler}", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"]
    done = subprocess.run(configure, capture_output=True, text=True, timeout=600)
    if done.returncode:
        tail = done.stdout[-2000:] + done.stderr[-2000:]
        if "-fsanitize=fuzzer" in tail or "libclang_rt" in tail:
            pytest.skip("clang cannot link libFuzzer here (libclang-rt-dev missing?): the C++ fuzz tests skip")
        pytest.fail(f"configuring the fuzz targets failed:\n{tail}")
    jobs = os.environ.get("OB_FUZZ_BUILD_JOBS", str(os.cpu_count() or 2))
    done = subprocess.run(["cmake", "--build", str(build), "-j", jobs, "--target", *TARGETS], capture_output=True,
                          text=True, timeout=1800)
    said = done.stdout[-3000:] + done.stderr[-2000:]
    if done.returncode and "/Unity/unity_" in said and re.search(r"error: (redefinition of|call to .* is ambiguous)",
                                                                 said):
        said += ("\n(the fuzz build compiles each library as one unit: two of its files define one internal name; "
                 "rename one, or list the library in OB_FUZZ_FILE_BY_FILE of tests/fuzz/CMakeLists.txt)")
    assert done.returncode == 0, f"building the fuzz targets failed:\n{said}"
    return build


@pytest.fixture(scope="module")
def fuzzed(built, tmp_path_factory):
    """Every built target fuzzed at once, each in a folder of its own: {target: (exit, stderr, findings)}. Side by
    side, their bounded times overlap: the module takes one target's time, not the sum."""
    running = {}
    for target, seeds in TARGETS.items():
        binary = built / target
        if not binary.exists():
            continue
        folder = tmp_path_factory.mktemp(target)
        corpus = folder / "corpus"
        shutil.copytree(REPO / "tests" / "fuzz" / "corpus" / seeds, corpus)
        command = [str(binary), str(corpus), f"-max_total_time={SECONDS}", "-rss_limit_mb=2048", "-timeout=10",
                   "-close_fd_mask=1", f"-artifact_prefix={folder}/"]
        dictionary = REPO / "tests" / "fuzz" / f"{seeds}.dict"
        if dictionary.is_file():
            command.append(f"-dict={dictionary}")
        environment = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
                       "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
        log = (folder / "fuzz.log").open("w+")
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, cwd=folder, env=environment)
        running[target] = (process, log, folder)
    results = {}
    try:
        for target, (process, log, folder) in running.items():
            try:
                code = process.wait(timeout=SECONDS + 120)
            except subprocess.TimeoutExpired:
                process.kill()
                code = f"killed after {SECONDS + 120} s"
                process.wait()
            log.seek(0)
            found = sorted(p.name for p in folder.iterdir()
                           if p.name.startswith(("crash-", "timeout-", "oom-", "leak-")))
            results[target] = (code, log.read(), found)
    finally:
        for process, log, _ in running.values():
            if process.poll() is None:
                process.kill()
                process.wait()
            log.close()
    return results


def pathlib_build():
    return pathlib.Path(os.environ.get("OB_BUILD_DIR", REPO / "build" / "default"))


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_native_reader_survives_coverage_guided_fuzzing(fuzzed, target):
    if target not in fuzzed:
        pytest.skip(f"{target} is not built here (the trace reader needs simdjson and zlib)")
    code, stderr, found = fuzzed[target]
    said = "\n".join(stderr.splitlines()[-40:])
    assert code == 0 and not found, f"{target}: exit {code}, {found}\n{said}"
    assert "Done" in stderr
