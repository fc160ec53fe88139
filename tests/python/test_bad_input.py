"""Bad invocations of every binary, table-driven: each must exit 2 with one line on stderr that names the option (or
the file at fault), and leave no file behind (the scripts': test_bad_input_scripts.py). The counts tried are printed
at the end of the test log (conftest.py)."""
import pytest

from conftest import REPO, one_error_line, run_command

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
        (["--timeout-s", "0"], "--timeout-s"), (["--inject-fault", "1:0:exit"], "--inject-fault"),
        (["--inject-fault", "0:1:explode"], "--inject-fault"),
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
        (["--socket-threads", "4"], "--socket-threads"),
        (["--emulate-nodes", "2", "--socket-threads", "8", "--socks-per-thread", "9"], "--socks-per-thread"),
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
        (["--plan", "auto", "--sync", "sharded", "--comm-dtype", "bf16"], "--comm-dtype"),
        (["--sweep", "plan=auto,0"], "--sweep"),
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
