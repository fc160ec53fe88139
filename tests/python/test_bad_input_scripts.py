"""Bad invocations of every script, table-driven: each must exit 2 with one line on stderr that names the option (or
the file at fault), and leave no file behind (the binaries': test_bad_input.py). The counts tried are printed at the
end of the test log (conftest.py)."""

import pytest

from conftest import built, one_error_line, run_command, tool

NO_DIR = "/nonexistent/dir"

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
    (["--graph", "--fsdp"], "--graph"), (["--graph", "--default"], "--graph"),
    (["--reshard-after-forward", "0"], "--reshard-after-forward"),
    (["--fsdp", "--reshard-after-forward", "2"], "--reshard-after-forward"),
    (["--socket-threads", "4"], "--socket-threads"), (["--socks-per-thread", "65"], "--socks-per-thread"),
    (["--passes", "0"], "--passes"), (["--iters", "4", "--passes", "5"], "--passes"),
]


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
    result = run_command([*tool(script), *args], work)
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
    result = run_command([*tool("report.py"), results, *extra], tmp_path)
    line = one_error_line(result, "report.py: error: ")
    assert named in line
    after = sorted(p.name for p in results.iterdir()) if results.is_dir() else None
    assert after == before, "a bad invocation left files behind"


@pytest.mark.parametrize("args,named", BENCH_DDP, ids=[" ".join(a) or "no arguments" for a, _ in BENCH_DDP])
def test_bad_invocation_of_bench_ddp(tmp_path, args, named):
    has_csv = "--csv" in args
    args = [a.replace("{work}", str(tmp_path)) for a in args] + ([] if has_csv or not args else
                                                                  ["--csv", str(tmp_path / "x.csv")])
    result = run_command([*tool("bench_ddp.py"), *args], tmp_path)
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
    result = run_command([*tool("bench_ddp.py"), *args, "--model-binary", model, "--csv",
                          tmp_path / "x.csv"], tmp_path)
    line = one_error_line(result, "bench_ddp.py: error: ")
    assert named in line
    assert list(tmp_path.iterdir()) == []
