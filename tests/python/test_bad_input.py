"""Bad invocations of every binary and every script, table-driven: each must exit 2 with one line on stderr that
names the option (or the file at fault), and leave no file behind. The counts tried are printed at the end of the
test log (conftest.py)."""
import os
import subprocess
import sys

import pytest

from conftest import REPO, built

SCRIPTS = REPO / "scripts"
NO_DIR = "/nonexistent/dir"

# Binaries: (arguments, what the error line must name). Options are checked before anything runs, so phases 1 and
# 4 give exit 2 on a machine without a GPU as on one with.
BINARIES = {
    "phase1_cuda_baseline": [
        (["--batch", "0"], "--batch"), (["--batch", "-5"], "--batch"), (["--in", "abc"], "--in"),
        (["--out", "2G"], "--out"), (["--batch", "1.5"], "--batch"), (["--kernel", "fast"], "--kernel"),
        (["--kernel", "tiled", "--tf32"], "--tf32"), (["--kernel", "naive", "--tf32"], "--tf32"),
        (["--memory", "pinned"], "--memory"), (["--lr", "nan"], "--lr"),
        (["--lr", "-1"], "--lr"), (["--device", "-1"], "--device"), (["--iters", "0"], "--iters"),
        (["--warmup", "-2"], "--warmup"), (["--batch", "1M", "--in", "1M"], "--batch"),
        (["--csv", f"{NO_DIR}/x.csv"], "--csv"), (["--timeline", f"{NO_DIR}/t.csv"], "--timeline"),
        (["--csv", "."], "--csv"), (["--no-such-option"], "--no-such-option"),
        (["--batch", "0x40"], "--batch"), (["--device", "00"], "--device"),
    ],
    "phase2_omp_overlap": [
        (["--chunks", "0"], "--chunks"), (["--chunks", "-3"], "--chunks"), (["--chunks", "many"], "--chunks"),
        (["--compute-ms", "nan"], "--compute-ms"), (["--comm-ms", "-1"], "--comm-ms"), (["--jitter", "2"], "--jitter"),
        (["--threads", "-1"], "--threads"), (["--mode", "fast"], "--mode"), (["--workload", "gpu"], "--workload"),
        (["--hidden", "0"], "--hidden"), (["--chunk-rows", "1.5"], "--chunk-rows"),
        (["--virtual-ranks", "0"], "--virtual-ranks"), (["--iters", "0"], "--iters"), (["--warmup", "-1"], "--warmup"),
        (["--no-such-option"], "--no-such-option"), (["--csv", f"{NO_DIR}/x.csv"], "--csv"),
        (["--timeline", f"{NO_DIR}/t.csv"], "--timeline"),
        (["--workload", "real", "--chunk-rows", "16M", "--hidden", "65536"], "--chunk-rows"),
        (["--chunks", "010"], "--chunks"), (["--chunks", "0x10"], "--chunks"), (["--chunks", "5 "], "--chunks"),
        (["--seed", "-1"], "--seed"), (["--iters=+3"], "--iters"), (["--threads", "4096"], "--threads"),
        (["--inject-fault", "1:0:exit"], "--inject-fault"), (["--timeout-s", "0"], "--timeout-s"),
        (["--csv", "/dev/null"], "--csv"), (["--csv", "x.csv", "--timeline", "x.csv"], "--timeline"),
        (["--csv", "-"], "--csv"), (["--timeline", "-"], "--timeline"),
        (["--csv", "x.csv", "--timeline", "x.meta.json"], "--timeline"),
    ],
    "phase3_mpi_cuda": [
        (["--chunks", "0"], "--chunks"), (["--chunks", "x"], "--chunks"), (["--strategy", "fast"], "--strategy"),
        (["--batch", "-1"], "--batch"), (["--batch", "nan"], "--batch"), (["--in", "0"], "--in"),
        (["--out", "1.5"], "--out"), (["--device", "tpu"], "--device"), (["--kernel", "fast"], "--kernel"),
        (["--device", "cpu", "--cuda-aware"], "--cuda-aware"), (["--lr", "inf"], "--lr"),
        (["--threads", "-2"], "--threads"), (["--iters", "0"], "--iters"),
        (["--batch", "16M", "--in", "1M"], "--batch"),
        (["--in", "1M", "--out", "1M"], "--in"), (["--csv", f"{NO_DIR}/x.csv"], "--csv"),
        (["--timeout-s", "0"], "--timeout-s"), (["--timeout-s", "nan"], "--timeout-s"),
        (["--inject-fault", "1:2"], "--inject-fault"), (["--inject-fault", "0:1:explode"], "--inject-fault"),
        (["--inject-fault", "-1:1:exit"], "--inject-fault"), (["--inject-fault", "1:2:exit"], "--inject-fault"),
        (["--inject-fault", "0:start-up:corrupt"], "--inject-fault"),
        (["--inject-fault", "0:startup:exit"], "--inject-fault"),
        (["--inject-fault", "1:start-up:hang"], "--inject-fault"),
        (["--chunks", "010"], "--chunks"), (["--seed", "0x5"], "--seed"),
    ],
    "phase4_chunked_nccl": [
        (["--hidden", "0"], "--hidden"), (["--layers", "-1"], "--layers"), (["--batch", "x"], "--batch"),
        (["--bucket-mb", "0"], "--bucket-mb"), (["--bucket-mb", "nan"], "--bucket-mb"),
        (["--first-bucket-mb", "-1"], "--first-bucket-mb"), (["--chunks", "5", "--bucket-mb", "10"], "--chunks"),
        (["--mode", "fast"], "--mode"), (["--mode", "3"], "--mode"), (["--comm-dtype", "FP32"], "--comm-dtype"),
        (["--sweep", "layers=1,2"], "--sweep"),
        (["--interference-mb", "4"], "--interference-mb"), (["--mode", "interference", "--check"], "--mode"),
        (["--mode", "interference", "--interference-mb", "2048"], "--interference-mb"),
        (["--mode", "interference", "--interference-mb", "0"], "--interference-mb"),
        (["--mode", "interference", "--interference-window-ms", "0"], "--interference-window-ms"),
        (["--sweep", "chunks=2.5"], "--sweep"),
        (["--sweep", "accum-steps=0,2"], "--sweep"), (["--comm-priority", "urgent"], "--comm-priority"),
        (["--plan", "best"], "--plan"), (["--plan", "auto", "--chunks", "4"], "--plan"),
        (["--plan", "auto", "--plan-syncs", "nccl,fancy"], "--plan-syncs"), (["--plan-syncs", "ce"], "--plan-syncs"),
        (["--plan", "auto", "--plan-syncs", "nccl,sharded", "--accum-steps", "2"], "--accum-steps"),
        (["--plan", "auto", "--sync", "sharded", "--graph"], "--graph"), (["--sweep", "plan=auto,0"], "--sweep"),
        (["--sweep", "plan=auto", "--chunks", "3"], "--sweep"),
        (["--calibration", f"{NO_DIR}/c.json"], "--calibration"),
        (["--nccl-max-ctas", "65"], "--nccl-max-ctas"), (["--nccl-min-ctas", "2"], "--nccl-min-ctas"),
        (["--nccl-min-ctas", "8", "--sweep", "nccl-max-ctas=4,16"], "--nccl-min-ctas"),
        (["--comm-dtype", "fp8"], "--comm-dtype"), (["--accum-steps", "0"], "--accum-steps"),
        (["--nccl-cta-policy", "fast"], "--nccl-cta-policy"),
        (["--accum-steps", "2000"], "--accum-steps"), (["--accum-steps", "1000", "--batch", "256K"], "--accum-steps"),
        (["--batch", "1M", "--hidden", "4096"], "--batch"), (["--timeout-s", "-5"], "--timeout-s"),
        (["--inject-fault", "0:x:hang"], "--inject-fault"), (["--csv", f"{NO_DIR}/x.csv"], "--csv"),
        (["--sweep", "comm-dtype=fp32,bf16"], "--sweep"), (["--chunks", "0"], "--chunks"),
        (["--chunks", "5", "--first-bucket-mb", "2"], "--chunks"), (["--sweep", "chunks"], "--sweep"),
        (["--sweep", "bucket-mb=1,x"], "--sweep"), (["--sweep", "bucket-mb=5", "--chunks", "4"], "--sweep"),
        (["--lr", "inf"], "--lr"), (["--nccl-max-ctas", "0"], "--nccl-max-ctas"),
        (["--nccl-min-ctas", "8", "--nccl-max-ctas", "4"], "--nccl-min-ctas"),
        (["--sync", "ring"], "--sync"), (["--sync", "ce", "--comm-dtype", "bf16"], "--comm-dtype"),
        (["--sync", "ce", "--nccl-cta-policy", "efficiency"], "--nccl-cta-policy"),
        (["--gemm-sm-margin", "-4"], "--gemm-sm-margin"), (["--sweep", "sync=nccl,fast"], "--sweep"),
        (["--sweep", "gemm-sm-margin=2.5"], "--sweep"), (["--layers", "016"], "--layers"),
        (["--sweep", "chunks=0x8"], "--sweep"),
        (["--model", "gpt2", "--hidden", "1024"], "--hidden"), (["--model", "gpt2", "--batch", "64"], "--batch"),
        (["--seq", "512"], "--seq"), (["--blocks", "2"], "--blocks"), (["--model", "no-such-model"], "--model"),
        (["--model", "gpt2", "--blocks", "13"], "--blocks"),
        (["--model", "gpt2", "--mode", "interference"], "--mode"),
        (["--model", "llama3-8b", "--seq", "65536"], "--seq"), (["--model", "gpt2", "--seq", "0"], "--seq"),
    ],
}

# Scripts: their well-formed arguments ({summary}, {timeline}, {power}, {out} filled in per case), and the bad
# cases that apply to every script with an input CSV and an -o output.
GOOD = {
    "plot_gantt.py": ["{timeline}", "-o", "{out}"],
    "plot_chunks.py": ["{timeline}", "-o", "{out}"],
    "plot_summary.py": ["{summary}", "-o", "{out}"],
    "plot_scaling.py": ["{summary}", "--x", "chunks", "-o", "{out}"],
    "plot_power.py": ["{power}", "-o", "{out}"],
}
KIND = {"plot_gantt.py": "timeline", "plot_chunks.py": "timeline", "plot_summary.py": "summary",
        "plot_scaling.py": "summary", "plot_power.py": "power"}

SUMMARY = ("system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max\n"
           "overlap-bench,phase2,seq,1,4,5,10,11,9,12\noverlap-bench,phase2,overlap,1,4,5,7,8,6,9\n"
           "overlap-bench,phase2,seq,1,8,5,10,11,9,12\noverlap-bench,phase2,overlap,1,8,5,6,7,5,8\n")
TIMELINE = ("rank,lane,name,iter,chunk,start_us,end_us\n0,overlap:compute,compute,0,0,0,100\n"
            "0,overlap:comm,allreduce,0,0,100,180\n0,overlap:compute,compute,0,1,100,200\n")
SUMMARY_SWEEP = "".join(line + (",bucket_mb\n" if i == 0 else f",{16 * 4 ** (i % 2 + 1)}\n")
                        for i, line in enumerate(SUMMARY.splitlines()))
POWER = "rank,gpu,t_us,power_w\n0,0,0,300\n0,0,20000,450\n0,0,40000,420\n"
GOOD_TEXT = {"summary": SUMMARY, "timeline": TIMELINE, "power": POWER}
# Per kind: a numeric column, and a value that is wrong for it beyond not being a number; a column that names.
NUMERIC = {"summary": ("time_ms_p50", "-"), "timeline": ("end_us", "-50"), "power": ("power_w", "-3")}
NAME_COLUMN = {"summary": "system", "timeline": "lane"}


def replace_value(text, column, value):
    """`text` with `column` of its first data row set to `value`."""
    lines = text.splitlines()
    header = lines[0].split(",")
    row = lines[1].split(",")
    row[header.index(column)] = value
    return "\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n"


def generic_cases(script):
    """(case id, {kind: file text or None for 'missing'}, argument edits, what the error must name)."""
    kind = KIND[script]
    column, wrong = NUMERIC[kind]
    header = GOOD_TEXT[kind].splitlines()[0]
    dropped = ",".join(c for c in header.split(",") if c != column)
    return [
        ("missing input", {kind: None}, {}, "no such file"),
        ("empty input", {kind: ""}, {}, "empty file"),
        ("binary input", {kind: b"\x00\xff\xfe garbage \x00\x01"}, {}, kind),
        ("header only", {kind: header + "\n"}, {}, "no rows"),
        ("missing column", {kind: dropped + "\n1\n"}, {}, f"'{column}'"),
        ("non-numeric value", {kind: replace_value(GOOD_TEXT[kind], column, "abc")}, {}, column),
        ("NaN value", {kind: replace_value(GOOD_TEXT[kind], column, "nan")}, {}, column),
        ("infinite value", {kind: replace_value(GOOD_TEXT[kind], column, "inf")}, {}, column),
        ("impossible value", {kind: replace_value(GOOD_TEXT[kind], column, wrong)}, {}, column),
        ("input is a directory", {kind: "DIR"}, {}, "a regular file"),
        ("output directory missing", {}, {"{out}": f"{NO_DIR}/x.png"}, "--output"),
        ("output directory is a file", {}, {"{out}": "{input_dir}/" + kind + ".csv/x.png"}, "--output"),
        ("output is a directory", {}, {"{out}": "{work}/sub.png"}, "--output"),
        ("output type unknown", {}, {"{out}": "{work}/x.xyz"}, "--output"),
        ("no output", {}, {"drop": ["-o", "{out}"]}, "--output"),
        ("unknown option", {}, {"add": ["--no-such-option"]}, "--no-such-option"),
    ] + ([("empty name", {kind: replace_value(GOOD_TEXT[kind], NAME_COLUMN[kind], "")}, {}, NAME_COLUMN[kind])]
         if kind in NAME_COLUMN else [])


SPECIFIC = {
    "plot_gantt.py": [("--iter not numbers", {}, {"add": ["--iter", "a,b"]}, "a,b"),
                      ("--ranks negative", {}, {"add": ["--ranks", "-1"]}, "--ranks"),
                      ("--lanes matching nothing", {}, {"add": ["--lanes", "nothing"]}, "--lanes")],
    "plot_chunks.py": [("--lanes matching nothing", {}, {"add": ["--lanes", "nothing"]}, "per-chunk")],
    "plot_summary.py": [("second summary broken", {}, {"add": ["{input_dir}/missing.csv"]}, "missing.csv"),
                        ("only unknown modes",
                         {"summary": SUMMARY.replace(",seq,", ",foo,").replace(",overlap,", ",bar,")},
                         {}, "no row of a mode")],
    "plot_scaling.py": [("--x unknown", {}, {"replace": ("chunks", "colour")}, "--x"),
                        ("--x absent from the CSV", {}, {"replace": ("chunks", "accum_steps")}, "accum_steps"),
                        ("sweep value inf", {"summary": SUMMARY_SWEEP.replace(",64\n", ",inf\n", 1)},
                         {"replace": ("chunks", "bucket_mb")}, "bucket_mb"),
                        ("sweep value text", {"summary": SUMMARY_SWEEP.replace(",64\n", ",big\n", 1)},
                         {"replace": ("chunks", "bucket_mb")}, "bucket_mb")],
    "plot_power.py": [("--timeline missing", {}, {"add": ["--timeline", f"{NO_DIR}/t.csv"]}, "t.csv"),
                      ("--timeline broken", {"timeline": ""}, {"add": ["--timeline", "{timeline}"]}, "empty")],
}

REPORT_CASES = [  # (case id, files in the results directory or a special marker, extra arguments, named)
    ("missing directory", "MISSING", [], "not a directory"),
    ("a file, not a directory", "FILE", [], "not a directory"),
    ("empty directory", {}, [], "no overlap-bench CSV"),
    ("only other files", {"notes.txt": "hello"}, [], "no overlap-bench CSV"),
    ("empty CSV", {"x.csv": ""}, [], "no overlap-bench CSV"),
    ("binary CSV", {"x.csv": b"\x00\xff\x00"}, [], "no overlap-bench CSV"),
    ("summary without rows", {"s.csv": SUMMARY.splitlines()[0] + "\n"}, [], "no rows"),
    ("summary with text time", {"s.csv": replace_value(SUMMARY, "time_ms_p50", "fast")}, [], "time_ms_p50"),
    ("summary with NaN time", {"s.csv": replace_value(SUMMARY, "time_ms_p50", "nan")}, [], "time_ms_p50"),
    ("summary with bad ranks", {"s.csv": replace_value(SUMMARY, "ranks", "two")}, [], "ranks"),
    ("timeline backwards", {"t.timeline.csv": replace_value(TIMELINE, "end_us", "-50")}, [], "end_us"),
    ("timeline with text", {"t.timeline.csv": replace_value(TIMELINE, "start_us", "x")}, [], "start_us"),
    ("power negative", {"p.power.csv": replace_value(POWER, "power_w", "-1")}, [], "power_w"),
    ("power NaN", {"p.power.csv": replace_value(POWER, "t_us", "nan")}, [], "t_us"),
    ("good summary, broken timeline", {"s.csv": SUMMARY, "t.timeline.csv": replace_value(TIMELINE, "iter", "?")}, [],
     "iter"),
    ("unknown option", {"s.csv": SUMMARY}, ["--no-such-option"], "--no-such-option"),
    ("metadata not JSON", {"s.csv": SUMMARY, "s.meta.json": "{not json"}, [], "s.meta.json"),
    ("figures is a file", {"s.csv": SUMMARY, "figures": "not a folder"}, [], "figures"),
    ("metadata not an object", {"s.csv": SUMMARY, "s.meta.json": "[1, 2]"}, [], "s.meta.json"),
    ("summary with only unknown modes", {"s.csv": SUMMARY.replace(",seq,", ",foo,").replace(",overlap,", ",bar,")},
     [], "s.csv"),
    ("summary with an empty mode", {"s.csv": replace_value(SUMMARY, "mode", "")}, [], "mode"),
    ("timeline with an empty lane", {"s.csv": SUMMARY, "t.timeline.csv": replace_value(TIMELINE, "lane", "")}, [],
     "lane"),
    ("two directories", {"s.csv": SUMMARY}, ["{input_dir}"], "unrecognized"),
]

BENCH_DDP = [
    (["--configs", "4096,16"], "--configs"), (["--configs", "4096,16,0"], "--configs"),
    (["--configs", "a,b,c"], "--configs"), (["--configs", "-1,2,3"], "--configs"),
    (["--configs", "4096,16,512,1"], "--configs"), (["--bucket-mb", "0"], "--bucket-mb"),
    (["--bucket-mb", "nan"], "--bucket-mb"), (["--bucket-mb", "x"], "--bucket-mb"), (["--iters", "0"], "--iters"),
    (["--iters", "1.5"], "--iters"), (["--warmup", "-1"], "--warmup"), (["--lr", "inf"], "--lr"),
    (["--seed", "-3"], "--seed"), (["--csv", f"{NO_DIR}/x.csv"], "--csv"), (["--csv", "{work}"], "--csv"),
    (["--csv", "{work}/x.txt"], "--csv"), (["--no-such-option"], "--no-such-option"), ([], "--csv"),
    (["--bucket-mb", "25", "-64"], "--bucket-mb"), (["--fsdp", "--default"], "--fsdp"),
    (["--reshard-after-forward", "0"], "--reshard-after-forward"),
    (["--fsdp", "--reshard-after-forward", "2"], "--reshard-after-forward"),
]


def one_error_line(result, prefix):
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(prefix), lines[0]
    return lines[0]


def run_command(command, cwd):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, cwd=cwd, timeout=120, env=env)


BINARY_CASES = [(name, args, named) for name, cases in BINARIES.items() for args, named in cases]


@pytest.mark.parametrize("name,args,named", BINARY_CASES,
                         ids=[f"{name}: {' '.join(args)}" for name, args, _ in BINARY_CASES])
def test_bad_invocation(build_dir, tmp_path, name, args, named):
    binary = next(build_dir.resolve().glob(f"*/{name}"), None)
    if binary is None:
        pytest.skip(f"{name} is not built")
    result = run_command([binary, *args], tmp_path)
    line = one_error_line(result, f"{name}: error: ")
    assert named in line
    assert list(tmp_path.iterdir()) == [], "a bad invocation left files behind"


SCRIPT_CASES = [(script, *case) for script in GOOD for case in generic_cases(script) + SPECIFIC.get(script, [])]


@pytest.mark.parametrize("script,case,files,edits,named", SCRIPT_CASES,
                         ids=[f"{s[0]}: {s[1]}" for s in SCRIPT_CASES])
def test_bad_invocation_of_script(tmp_path, script, case, files, edits, named):
    inputs, work = tmp_path / "in", tmp_path / "work"
    inputs.mkdir()
    work.mkdir()
    (work / "sub.png").mkdir()
    paths = {}
    for kind, text in GOOD_TEXT.items():
        path = inputs / f"{kind}.csv"
        content = files.get(kind, text)
        if content == "DIR":
            path.mkdir()
        elif isinstance(content, bytes):
            path.write_bytes(content)
        elif content is not None:
            path.write_text(content)
        paths[kind] = path
    fill = {"{summary}": paths["summary"], "{timeline}": paths["timeline"], "{power}": paths["power"],
            "{out}": work / "out.png"}
    fill.update({k: v for k, v in edits.items() if k.startswith("{")})
    args = list(GOOD[script])
    for word in edits.get("drop", []):
        args.remove(word)
    if "replace" in edits:
        args[args.index(edits["replace"][0])] = edits["replace"][1]
    args += edits.get("add", [])
    args = [str(fill.get(a, a)).replace("{input_dir}", str(inputs)).replace("{work}", str(work)) for a in args]
    args = [str(fill.get(a, a)) for a in args]
    before = sorted(p.name for p in inputs.iterdir())
    result = run_command([sys.executable, SCRIPTS / script, *args], work)
    line = one_error_line(result, f"{script}: error: ")
    assert named in line
    assert sorted(p.name for p in work.iterdir()) == ["sub.png"], "a bad invocation left files behind"
    assert sorted(p.name for p in inputs.iterdir()) == before


@pytest.mark.parametrize("case,files,extra,named", REPORT_CASES, ids=[c[0] for c in REPORT_CASES])
def test_bad_invocation_of_report(tmp_path, case, files, extra, named):
    results = tmp_path / "results"
    if files == "FILE":
        results.write_text("not a directory")
    elif files != "MISSING":
        results.mkdir()
        for name, content in files.items():
            if isinstance(content, bytes):
                (results / name).write_bytes(content)
            else:
                (results / name).write_text(content)
    before = sorted(p.name for p in results.iterdir()) if results.is_dir() else None
    extra = [a.replace("{input_dir}", str(tmp_path)) for a in extra]
    result = run_command([sys.executable, SCRIPTS / "report.py", results, *extra], tmp_path)
    line = one_error_line(result, "report.py: error: ")
    assert named in line
    after = sorted(p.name for p in results.iterdir()) if results.is_dir() else None
    assert after == before, "a bad invocation left files behind"


@pytest.mark.parametrize("args,named", BENCH_DDP, ids=[" ".join(a) or "no arguments" for a, _ in BENCH_DDP])
def test_bad_invocation_of_bench_ddp(tmp_path, args, named):
    has_csv = "--csv" in args
    args = [a.replace("{work}", str(tmp_path)) for a in args] + ([] if has_csv or not args else
                                                                  ["--csv", str(tmp_path / "x.csv")])
    result = run_command([sys.executable, SCRIPTS / "bench_ddp.py", *args], tmp_path)
    line = one_error_line(result, "bench_ddp.py: error: ")
    assert named in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args,named", [
    (["--seq", "512"], "--seq"), (["--blocks", "2"], "--blocks"), (["--model", "gpt2", "--seq", "0"], "--seq"),
    (["--model", "llama-9000"], "--model"), (["--model", "gpt2", "--blocks", "13"], "--blocks"),
    (["--model", "{work}/missing.config.json"], "--model"),
])
def test_bad_model_invocation_of_bench_ddp(build_dir, tmp_path, args, named):
    """bench_ddp.py --model: the shape comes from phase4_model (one parser); a bad one exits 2 before any work."""
    model = built(build_dir, "phase4_chunked_nccl/phase4_model")
    args = [a.replace("{work}", str(tmp_path)) for a in args]
    result = run_command([sys.executable, SCRIPTS / "bench_ddp.py", *args, "--model-binary", model, "--csv",
                          tmp_path / "x.csv"], tmp_path)
    line = one_error_line(result, "bench_ddp.py: error: ")
    assert named in line
    assert list(tmp_path.iterdir()) == []


def test_phase4_never_writes_over_the_files_it_reads(build_dir, tmp_path):
    """--model's config.json and --calibration are inputs: an output named like either exits 2 and leaves it whole."""
    binary = next(build_dir.resolve().glob("*/phase4_chunked_nccl"), None)
    if binary is None:
        pytest.skip("phase4_chunked_nccl is not built")
    config = tmp_path / "model.json"
    text = (REPO / "tests" / "data" / "models" / "gpt2.config.json").read_text()
    config.write_text(text)
    for args in (["--csv", config], ["--timeline", config], ["--csv", tmp_path / "model.csv", "--timeline",
                                                             tmp_path / "." / "model.json"]):
        result = run_command([binary, "--model", config, *args], tmp_path)
        line = one_error_line(result, "phase4_chunked_nccl: error: ")
        assert "--model reads" in line, line
        assert config.read_text() == text and sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]
