"""Issue 83: each class of hostile input refused where it arises, once: the one JSON loader (nesting bounded as the
bytes pass, brackets inside strings not counted), the one CSV loader (empty, column-less, a required column missing),
the one archive reader (a tar header's size bounded before tarfile reads it), the one writer (never a link, never a
folder it did not write), arguments checked before any work (numbers that are numbers, lists without repeats), a
guardian that ends children and staging folders even on SIGKILL. Each: one line, exit 2, nothing written."""
import gzip
import io
import json
import os
import signal
import subprocess
import sys
import tarfile

import pytest

from conftest import built, one_error_line, script, tool
from overlap_bench.core import inputs, ob_tool, packs


def test_json_nesting_is_bounded_and_brackets_inside_strings_do_not_count(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(ob_tool.UsageError, match="nests deeper than 512"):
        inputs.load_json(deep, "--x")
    quoted = tmp_path / "quoted.json"
    quoted.write_text(json.dumps({"name": "[" * 100000 + '\\"{' * 1000, "n": [[1]]}))
    assert inputs.load_json(quoted, "--x")["n"] == [[1]]
    for text, why in (("{not json", "not JSON"), ("[NaN]", "NaN")):
        quoted.write_text(text)
        with pytest.raises(ob_tool.UsageError, match=why):
            inputs.load_json(quoted, "--x")


def test_the_nesting_count_carries_across_reads():
    data = b'{"a": "x\\\\", "b": "[[\\"[", "c": [[1]]}'
    whole = inputs._nest(data, (0, False, 0), 99, lambda: None)
    state = (0, False, 0)
    for i in range(len(data)):  # a byte at a time: escapes and strings split across reads
        state = inputs._nest(data[i:i + 1], state, 99, lambda: None)
    assert whole == state and state[:2] == (0, False)


def test_a_corrupt_gzip_is_a_usage_error(tmp_path):
    path = tmp_path / "t.json.gz"
    data = bytearray(gzip.compress(b'{"traceEvents": []}' * 1000))
    data[20:40] = b"\xff" * 20
    path.write_bytes(bytes(data))
    with pytest.raises(ob_tool.UsageError, match="not a readable gzip file"):
        with inputs.open_input(path, "TRACE") as stream:
            stream.read()


def test_a_pack_with_a_huge_pax_header_is_refused_before_tarfile_reads_it(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo("s.csv")
        info.size, info.pax_headers = 2, {"comment": "x" * (packs.MOST_MEMBER_BYTES + 1)}
        archive.addfile(info, io.BytesIO(b"a\n"))
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / packs.PACK).write_bytes(gzip.compress(buffer.getvalue()))
    one_error_line(script("packs", "unpack", tmp_path), "packs.py: error:")
    assert not (tmp_path / "a" / "s.csv").exists()


@pytest.mark.parametrize("text, message", [("", "an empty file (no header)"), ("\n\n", "an empty file (no header)"),
                                           ("a,b\n1,2\n", "no column 'label'")])
def test_the_csv_loader_refuses_empty_and_column_less_files(tmp_path, text, message):
    (tmp_path / "trace_job.csv").write_text(text)
    line = one_error_line(script("analyze_check", tmp_path, "--csv", tmp_path / "c.csv"), "analyze_check.py: error:")
    assert message in line and not (tmp_path / "c.csv").exists()


def test_the_writer_refuses_a_link_and_unpack_never_replaces_a_loose_file(tmp_path):
    (tmp_path / "target").write_text("KEEP")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    with pytest.raises(ob_tool.UsageError, match="symbolic link"):
        ob_tool.write_text_atomic(tmp_path / "link", "x")
    assert (tmp_path / "link").is_symlink() and (tmp_path / "target").read_text() == "KEEP"
    folder = tmp_path / "res" / "a"
    folder.mkdir(parents=True)
    (folder / "s.csv").write_text("OLD")
    packs._write(folder / packs.PACK, {"s.csv": b"OLD"})
    (folder / "s.csv").write_text("NEWER")
    one_error_line(script("packs", "unpack", tmp_path / "res"), "packs.py: error:")
    assert (folder / "s.csv").read_text() == "NEWER"


def test_ob_analyze_checks_out_and_predictor_before_any_work_and_keeps_a_user_folder(tmp_path):
    trace = tmp_path / "t.json"
    trace.write_text("{}")
    (tmp_path / "afile").write_text("")
    line = one_error_line(script("analyze", trace, "--out", tmp_path / "afile"), "analyze.py: error:")
    assert "--out" in line
    line = one_error_line(script("analyze", trace, "--out", tmp_path / "o", "--predictor", "/nonexistent"),
                          "analyze.py: error:")
    assert "--predictor" in line
    (tmp_path / "o" / "analysis.png").mkdir(parents=True)
    (tmp_path / "o" / "analysis.png" / "mine.txt").write_text("the user's")
    one_error_line(script("analyze", trace, "--out", tmp_path / "o"), "analyze.py: error:")
    assert (tmp_path / "o" / "analysis.png" / "mine.txt").read_text() == "the user's"


def test_ob_analyze_says_when_it_holds_fewer_traces_than_the_job_s_ranks(tmp_path):
    from test_analyze import analyze, kineto

    path = kineto(tmp_path / "t.json", [(0.0, 10, "gemm", "", 0), (20.0, 20, "ncclDevKernel_AllReduce", "allreduce",
                                                                    1 << 22)], [(0.0, 100.0), (200.0, 300.0)], world=8)
    result = analyze(path, "--out", tmp_path / "a")
    assert result.returncode == 0 and "Only 1 of the job's 8 ranks' traces were given" in result.stdout, result.stderr


EXPERIMENT = """name = "h"
rounds = 3
iters = 12
configs = ["4096x16x512"]
strategies = ["nccl"]
planned_syncs = ["nccl"]
ddp_caps_mb = [25]
fsdp2 = false
baseline = "ddp-25"
"""


@pytest.mark.parametrize("edit, key", [(("ddp_caps_mb = [25]", "ddp_caps_mb = [true]"), "ddp_caps_mb"),
                                       (("ddp_caps_mb = [25]", "ddp_caps_mb = [25, 25]"), "ddp_caps_mb"),
                                       (("fsdp2 = false", "fsdp2 = false\nroundz = 3"), "roundz"),
                                       (('baseline = "ddp-25"', 'baseline = "nope"'), "baseline")])
def test_an_experiment_s_keys_numbers_and_baseline_are_checked_before_any_calibration(tmp_path, edit, key):
    (tmp_path / "e.toml").write_text(EXPERIMENT.replace(*edit))
    line = one_error_line(script("headline", "--experiment", tmp_path / "e.toml", "--out", tmp_path / "o",
                                 "--dry-run"), "headline.py: error:")
    assert key in line and not (tmp_path / "o").exists()


def test_ob_gate_refuses_a_configuration_named_twice(tmp_path):
    line = one_error_line(script("gate", "--base-build", tmp_path, "--build", tmp_path, "--out", tmp_path / "g",
                                 "--configs", "4096x16x512,4096x16x512"), "gate.py: error:")
    assert "--configs" in line


@pytest.mark.parametrize("name, value", [("v-{v}", "a\\nevil\\ttouch PWNED"), ("../escape-{v}", "1")])
def test_bench_parts_refuses_step_names_and_values_that_would_become_shell_or_paths(tmp_path, name, value):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench.toml").write_text('parts = ["x"]\n')
    (tmp_path / "bench" / "x.toml").write_text(f'part = "x"\nsummary = "s"\n[[step]]\nname = "{name}"\n'
                                               f'matrix = {{ v = ["{value}"] }}\ncommand = "echo {{v}}"\n')
    result = script("bench_parts", "--parts", tmp_path / "bench")
    one_error_line(result, "bench_parts.py: error:")
    assert result.stdout == ""


def test_ob_compare_refuses_a_bad_mode_and_a_long_name_before_any_round(tmp_path):
    for contender in ("a:we ird=true {csv}", f"{'b' * 300}=true {{csv}}"):
        line = one_error_line(script("compare", "--out", tmp_path / "o", "--rounds", "2", "--contender", contender,
                                     "--contender", "c=true {csv}"), "compare.py: error:")
        assert "--contender" in line and not (tmp_path / "o").exists()


def test_a_sigkilled_ob_compare_leaves_no_staging_folder_and_no_running_contender(tmp_path):
    """The guardian ends the contender's group and removes the staging folder once ob-compare is gone; the test
    waits for the guardian's own exit (no clock)."""
    started, out = tmp_path / "started", tmp_path / "o"
    contenders = [arg for name in "ab" for arg in ("--contender", f"{name}=touch {started}; sleep 600; : {{csv}}")]
    process = subprocess.Popen([*tool("compare"), "--out", str(out), "--rounds", "2", *contenders],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not started.exists() and process.poll() is None:
            os.sched_yield()
        contender, guardian = (processes_holding(text) for text in (str(started), "held = set()"))
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert contender and guardian
    while processes_holding("held = set()") & guardian:
        os.sched_yield()
    assert not processes_holding(str(started)) and not [p for p in out.iterdir() if p.name.startswith(".staging")]


def processes_holding(text):
    """The live (not zombie) processes whose command line holds `text`."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as line, open(f"/proc/{pid}/stat") as stat:
                if text.encode() in line.read() and not stat.read().rsplit(") ", 1)[1].startswith("Z"):
                    found.add(pid)
        except OSError:
            pass
    return found


def test_phase4_refuses_an_empty_or_repeated_plan_syncs(build_dir):
    binary = built(build_dir, "phase4_chunked_nccl/phase4_chunked_nccl")
    for value in (",", "nccl,nccl", "nccl,,ce"):
        result = subprocess.run([str(binary), "--plan", "auto", "--plan-syncs", value], capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, (value, result.stderr)
        assert "--plan-syncs" in result.stderr


def test_phase4_model_refuses_a_mixture_of_experts_named_by_its_routing_keys(build_dir, tmp_path):
    binary = built(build_dir, "phase4_chunked_nccl/phase4_model")
    config = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000, "num_experts_per_tok": 2,
              "moe_num_experts": 16}
    (tmp_path / "moe.json").write_text(json.dumps(config))
    result = subprocess.run([str(binary), "--model", str(tmp_path / "moe.json")], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2 and "mixture-of-experts" in result.stderr, result.stderr


@pytest.mark.parametrize("edit", [{"ranks": 2.5}, {"ranks": True}, {"model": {"hidden": 2 ** 32 + 4096}}])
def test_phase4_predict_takes_numbers_as_the_numbers_they_are(build_dir, tmp_path, edit):
    from conftest import REPO

    binary = built(build_dir, "phase4_chunked_nccl/phase4_predict")
    calibration = json.loads((REPO / "tests/data/planner-4096-16-512.calibration.json").read_text())
    for key, value in edit.items():
        calibration[key] = {**calibration[key], **value} if isinstance(value, dict) else value
    (tmp_path / "c.json").write_text(json.dumps(calibration))
    result = subprocess.run([str(binary), "--calibration", str(tmp_path / "c.json")], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_phase2_refuses_a_step_longer_than_its_timeout_before_any_work(build_dir, tmp_path):
    binary = built(build_dir, "phase2_omp_overlap/phase2_omp_overlap")
    result = subprocess.run([str(binary), "--compute-ms", "5000", "--timeout-s", "1", "--csv", str(tmp_path / "s.csv")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "--timeout-s" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "s.csv").exists()


def test_a_metadata_sidecar_that_is_a_folder_is_refused_not_skipped(tmp_path):
    (tmp_path / "s.csv").write_text("system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,"
                                    "time_ms_max\nx,phase2,seq,1,1,3,2,2,2,2\n")
    (tmp_path / "s.meta.json").mkdir()
    with pytest.raises(ob_tool.UsageError, match="a regular file"):
        from overlap_bench.core import ob_csv

        ob_csv.read_metadata(tmp_path / "s.csv")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
