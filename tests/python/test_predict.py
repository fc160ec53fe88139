"""The planner's what-if (overlap_bench/planner/predict.py running phase4_predict) on a hand-made calibration: the
prediction at the calibrated ranks does not depend on the network, a slower network predicts slower steps across
nodes, sizes outside the calibration are marked, the DDP recommendation is one of the caps tried; a bad calibration or
option exits 2 with one line naming it."""
import json
import subprocess

import pandas as pd
import pytest

from conftest import tool

MIB = 1 << 20


def calibration(tmp_path, **changes):
    """4 layers of 1024 (4 MiB of gradient each), calibrated on 2 GPUs at 1, 4 and 16 MiB."""
    data = {
        "kind": "overlap-bench phase4 calibration", "schema_version": 1, "commit": "abc123", "host": "node1",
        "date_utc": "2026-11-23T00:00:00Z", "gpu": "NVIDIA H200", "ranks": 2,
        "model": {"hidden": 1024, "layers": 4, "batch": 256, "tf32": True, "comm_dtype": "fp32", "accum_steps": 1},
        "compute": {"forward_ms": 1.0, "update_ms": 0.2, "iteration_ms": 5.5, "step_ms": [1.0, 1.0, 1.0, 1.0]},
        "strategies": [{"sync": "nccl", "bytes": [MIB, 4 * MIB, 16 * MIB], "comm_ms": [0.05, 0.1, 0.3],
                        "stretch": [1.2, 1.15, 1.1], "slowdown": [0.2, 0.25, 0.3]}],
    }
    data.update(changes)
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(data))
    return path


def predict(predictor, *args, cwd=None):
    return subprocess.run([*tool("predict.py"), *map(str, args), "--predictor",
                           str(predictor)], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_what_if_scales_with_the_network(predictor, tmp_path):
    csv, png = tmp_path / "what-if.csv", tmp_path / "what-if.png"
    result = predict(predictor, calibration(tmp_path), "--csv", csv, "-o", png, "--ranks", "2,8,16,64,1024")
    assert result.returncode == 0, result.stderr
    frame = pd.read_csv(csv)
    assert len(frame) == 10 and set(frame["link"]) == {"ib400", "eth100"}
    by = frame.set_index(["link", "ranks"])
    # Within a node the calibrated link: the network does not matter.
    for ranks in (2, 8):
        assert by.loc[("ib400", ranks), "predicted_ms"] == pytest.approx(by.loc[("eth100", ranks), "predicted_ms"])
    # Across nodes the slower network is slower, and more GPUs never make the step shorter.
    for ranks in (16, 64, 1024):
        assert by.loc[("eth100", ranks), "predicted_ms"] > by.loc[("ib400", ranks), "predicted_ms"]
    for link in ("ib400", "eth100"):
        steps = frame[frame["link"] == link].sort_values("ranks")["predicted_ms"].tolist()
        assert steps == sorted(steps), (link, steps)
    # The compute alone (forward 1 + backward 4 + update 0.2 + the 0.3 ms outside them) bounds every prediction.
    assert (frame["predicted_ms"] >= 5.5 - 1e-9).all()
    outside = (frame["largest_bucket_mb"] > 16 + 1e-9) | (frame["first_bucket_mb"] < 1 - 1e-9)
    assert (frame["extrapolated"] == outside.astype(int)).all()
    assert frame["ddp_bucket_cap_mb"].isin([1, 2, 5, 10, 25, 50, 64, 100, 128, 256, 512, 1024]).all()
    assert (frame["predicted_ms"] <= frame["ddp_predicted_ms"] + 1e-9).all(), "the best plan lost to a DDP cap"
    assert (frame["calibrated_gpu"] == "NVIDIA H200").all()
    assert png.stat().st_size > 10000
    assert "recommended PyTorch DDP bucket_cap_mb:" in result.stdout


@pytest.mark.parametrize("change, words", [
    ({"strategies": []}, "'strategies' lists no strategy"),
    ({"compute": {"forward_ms": 1.0, "update_ms": 0.2, "iteration_ms": 5.0}}, "missing key 'compute.step_ms'"),
    ({"kind": "other"}, "not a phase 4 calibration"),
    ({"schema_version": 7}, "schema_version 7 is not one this build reads"),
    ({"compute": {"forward_ms": -1.0, "update_ms": 0.2, "iteration_ms": 5.5, "step_ms": [1.0] * 4}},
     "compute.forward_ms must be a finite time"),
    ({"model": {"hidden": -1024, "layers": 4, "batch": 256, "tf32": True, "comm_dtype": "fp32", "accum_steps": 1}},
     "model.hidden must be >= 1"),
    ({"strategies": [{"sync": "fancy", "bytes": [MIB], "comm_ms": [0.05], "stretch": [1.2], "slowdown": [0.2]}]},
     "sync 'fancy' is not a strategy of this build"),
    ({"strategies": [{"sync": "nccl", "bytes": [MIB], "comm_ms": [0.05], "stretch": [1.2], "slowdown": [0.2]}] * 2},
     "sync 'nccl' is calibrated twice"),
])
def test_bad_calibration_exits_2_naming_it(predictor, tmp_path, change, words):
    result = predict(predictor, calibration(tmp_path, **change), "--csv", tmp_path / "w.csv")
    assert result.returncode == 2, result.stderr
    assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (tmp_path / "w.csv").exists()


@pytest.mark.parametrize("args, words", [
    (["--ranks", "1,2"], "--ranks"),
    (["--links", "ib400,fast:0:1"], "--links"),
    (["--ranks", "4,6", "--gpus-per-node", "4"], "must fill whole nodes of that many GPUs (6 does not)"),
])
def test_bad_options_exit_2(predictor, tmp_path, args, words):
    result = predict(predictor, calibration(tmp_path), "--csv", tmp_path / "w.csv", *args)
    assert result.returncode == 2 and words in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_times_too_large_to_sum_are_refused_not_a_crash(predictor, tmp_path):
    """Times of 1e308 ms overflowed the model's sums and crashed it (rc 139): refused, naming the key."""
    path = calibration(tmp_path)
    path.write_text(path.read_text().replace('"forward_ms": 1.0', '"forward_ms": 1e308'))
    result = subprocess.run([str(predictor), "--calibration", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "compute.forward_ms must be a finite time" in result.stderr, result.stderr
    path = calibration(tmp_path)
    path.write_text(path.read_text().replace('"comm_ms": [0.05', '"comm_ms": [1e308'))
    result = subprocess.run([str(predictor), "--calibration", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "comm_ms" in result.stderr, result.stderr


def test_not_json_exits_2(predictor, tmp_path):
    path = tmp_path / "cal.json"
    path.write_text("{ not json")
    result = predict(predictor, path, "--csv", tmp_path / "w.csv")
    assert result.returncode == 2 and "not JSON" in result.stderr, result.stderr


def test_a_given_plan_is_predicted_not_chosen(predictor, tmp_path):
    """--bucket-mb predicts that plan (to compare with a measured run of it): cut as phase 4 cuts it, never faster
    than the best plan; a size that is not one exits 2 naming the option."""
    cal = calibration(tmp_path)
    best, fixed = tmp_path / "best.csv", tmp_path / "fixed.csv"
    assert predict(predictor, cal, "--csv", best, "--ranks", "2,4,16").returncode == 0
    result = predict(predictor, cal, "--csv", fixed, "--ranks", "2,4,16", "--sync", "nccl", "--bucket-mb", "4")
    assert result.returncode == 0, result.stderr
    assert "the plan of 4 MiB buckets is 5 buckets (nccl)" in result.stdout
    given, chosen = pd.read_csv(fixed), pd.read_csv(best)
    # 4 layers of 4 MiB, a 1 MiB first bucket and then 4 MiB ones: 1 + 4 + 4 + 4 + 3
    assert (given["buckets"] == 5).all() and (given["first_bucket_mb"] == 1).all()
    assert (given["largest_bucket_mb"] == 4).all()
    assert (given["predicted_ms"].to_numpy() >= chosen["predicted_ms"].to_numpy() - 1e-9).all()
    steps = given[given["link"] == "ib400"].sort_values("ranks")["predicted_ms"].tolist()
    assert steps == sorted(steps) and steps[0] < steps[-1], steps
    for args, words in ((["--bucket-mb", "0"], "--bucket-mb: '0' is invalid"),
                        (["--bucket-mb", "4", "--first-bucket-mb", "-1"], "--first-bucket-mb: '-1' is invalid")):
        bad = predict(predictor, cal, "--csv", tmp_path / "x.csv", *args)
        assert bad.returncode == 2 and words in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.csv").exists()


def test_across_nodes_no_strategy_that_needs_peer_access_is_chosen(predictor, tmp_path):
    """ce (copy engines on symmetric windows) is the calibration's fastest, but it needs the GPUs' peer access: within
    a node it is chosen, across nodes nccl is; --sync ce across nodes, or a calibration of ce alone, exits 2."""
    nccl = {"sync": "nccl", "bytes": [MIB, 4 * MIB, 16 * MIB], "comm_ms": [0.05, 0.1, 0.3],
            "stretch": [1.2, 1.15, 1.1], "slowdown": [0.2, 0.25, 0.3]}
    ce = dict(nccl, sync="ce", comm_ms=[0.02, 0.04, 0.12], slowdown=[0.0, 0.0, 0.0])
    cal = calibration(tmp_path, strategies=[nccl, ce])
    csv = tmp_path / "w.csv"
    result = predict(predictor, cal, "--csv", csv, "--ranks", "2,8,16,64", "--links", "ib400")
    assert result.returncode == 0, result.stderr
    chosen = pd.read_csv(csv).set_index("ranks")["sync"].to_dict()
    assert chosen == {2: "ce", 8: "ce", 16: "nccl", 64: "nccl"}, chosen
    for args, named in ((["--sync", "ce"], "--sync: 'ce' is invalid"), ([], "--calibration")):
        only = cal if args else calibration(tmp_path, strategies=[ce])
        bad = predict(predictor, only, "--csv", tmp_path / "x.csv", "--ranks", "16", *args)
        assert bad.returncode == 2 and named in bad.stderr and "runs across nodes" in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.csv").exists()
    assert predict(predictor, calibration(tmp_path, strategies=[ce]), "--csv", csv, "--ranks", "2,8").returncode == 0


def test_a_transformer_is_predicted_from_the_calibration_with_its_buckets_drawn(predictor, model_binary, tmp_path):
    """--model: the same calibration's communication and GEMM rates on gpt2's tensors (the compute estimated, and
    said so); the steps CSV holds every tensor phase4_model lists, in backward order, and the buckets they end in;
    the recommendation names a strategy and a DDP cap from 8 GPUs up; the figure is drawn."""
    cal = calibration(tmp_path)
    csv, steps, png = tmp_path / "w.csv", tmp_path / "steps.csv", tmp_path / "steps.png"
    result = predict(predictor, cal, "--csv", csv, "--ranks", "2,8,64", "--model", "gpt2", "--seq", "256",
                     "--layers-csv", steps, "--layers-figure", png)
    assert result.returncode == 0, result.stderr
    frame = pd.read_csv(csv)
    assert (frame["model"] == "gpt2").all() and (frame["compute_estimated"] == 1).all()
    assert "compute ESTIMATED" in result.stdout
    assert "ib400: 8: nccl, cap" in result.stdout and "64: nccl, cap" in result.stdout
    tensors = tmp_path / "tensors.csv"
    assert subprocess.run([str(model_binary), "--model", "gpt2", "--csv", str(tensors)], capture_output=True,
                          timeout=60).returncode == 0
    listed, planned = pd.read_csv(tensors), pd.read_csv(steps)
    assert planned["name"].tolist() == listed["name"].tolist()
    assert planned["grad_mib"].to_numpy() == pytest.approx(listed["grad_mib"].to_numpy(), rel=1e-5)
    # Buckets in backward order: each step ends in the same bucket as the step before it or a later one.
    assert planned["bucket"].is_monotonic_increasing and planned["bucket"].iloc[-1] == planned["buckets"].iloc[0] - 1
    assert planned["ddp_bucket"].is_monotonic_increasing
    # Only GEMMs cost compute in the estimate: norms and biases none, the V projection carries the attention core,
    # and gpt2's tied LM head runs first (step 0, the final norm's), though its gradient completes last.
    vectors = planned[planned["name"].str.contains("norm|bias") & (planned["step"] > 0)]
    assert (vectors["backward_ms"] == 0).all() and (planned["backward_ms"] >= 0).all()
    assert planned["name"].iloc[-1] == "embed_tokens (tied lm_head)" and planned["backward_ms"].iloc[-1] == 0
    assert planned["backward_ms"].iloc[0] == planned["backward_ms"].max()
    block = planned[planned["name"].str.startswith("block 3 ")].set_index("name")["backward_ms"]
    assert block["block 3 attn.v"] > block["block 3 attn.k"]
    assert png.stat().st_size > 10000
    # The model's options need --model; more blocks than the model has exit 2 naming --blocks.
    bad = predict(predictor, cal, "--csv", tmp_path / "x.csv", "--seq", "512")
    assert bad.returncode == 2 and "need --model" in bad.stderr, bad.stderr
    bad = predict(predictor, cal, "--csv", tmp_path / "x.csv", "--model", "gpt2", "--blocks", "13")
    assert bad.returncode == 2 and "--blocks" in bad.stderr and not (tmp_path / "x.csv").exists(), bad.stderr


def run_predictor(predictor, *args):
    """phase4_predict itself (not predict.py)."""
    return subprocess.run([str(predictor), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_a_measured_transformer_calibration_keeps_its_tensors_and_is_no_base_for_an_estimate(predictor, model_binary,
                                                                                              tmp_path):
    # gpt2's first block, measured (phase4_chunked_nccl --model gpt2 --blocks 1 --calibrate writes these keys): its
    # steps are gpt2's tensors, so the steps CSV names them and says the compute was measured.
    tensors_csv = tmp_path / "tensors.csv"
    subprocess.run([str(model_binary), "--model", "gpt2", "--blocks", "1", "--csv", str(tensors_csv)], check=True,
                   capture_output=True)
    tensors = pd.read_csv(tensors_csv)
    n = len(tensors)
    cal = calibration(tmp_path, compute={"forward_ms": 1.0, "update_ms": 0.2, "iteration_ms": 5.5,
                                         "step_ms": [0.1] * n})
    data = json.loads(cal.read_text())
    data["model"].update({"hidden": 768, "layers": n, "batch": 1024, "name": "gpt2",
                          "step_elements": tensors["elements"].tolist()})
    cal.write_text(json.dumps(data))
    steps = tmp_path / "steps.csv"
    result = run_predictor(predictor, "--calibration", cal, "--ranks", "2", "--csv", tmp_path / "p.csv",
                           "--layers-csv", steps)
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(steps)
    assert table["name"].tolist() == tensors["name"].tolist()
    assert (table["compute_estimated"] == 0).all() and table["backward_ms"].tolist() == [0.1] * n
    point = pd.read_csv(tmp_path / "p.csv").iloc[0]
    assert point["model"] == "gpt2" and point["compute_estimated"] == 0
    # an estimate needs the square layers' GEMM rates: a transformer's calibration is refused as its base
    result = run_predictor(predictor, "--calibration", cal, "--ranks", "2", "--model", "llama3-8b")
    assert result.returncode == 2 and "square-layer model" in result.stderr and len(result.stderr.splitlines()) == 1
    # step sizes that do not match the layers are a bad calibration
    data["model"]["step_elements"] = tensors["elements"].tolist()[:-1]
    cal.write_text(json.dumps(data))
    result = run_predictor(predictor, "--calibration", cal, "--ranks", "2")
    assert result.returncode == 2 and "step_elements" in result.stderr


def test_a_slowdown_clearly_below_zero_is_warned_and_one_within_noise_is_not(predictor, tmp_path):
    strategy = {"sync": "nccl", "bytes": [MIB, 4 * MIB, 16 * MIB], "comm_ms": [0.05, 0.1, 0.3],
                "stretch": [1.2, 1.15, 1.1]}
    # As the calibrations before 2e5ca33 measured: an overlapped backward 31 % faster than "its" compute-only run.
    broken = calibration(tmp_path, strategies=[{**strategy, "slowdown": [0.1, -0.02, -0.313]}])
    run = run_predictor(predictor, "--calibration", broken, "--ranks", "2")
    assert run.returncode == 0, run.stderr
    warnings = [line for line in run.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, run.stderr
    assert "--sync nccl's slowdown is -0.313 at 16 MiB buckets, below -0.05" in warnings[0]
    assert str(broken) in warnings[0]
    noisy = calibration(tmp_path, strategies=[{**strategy, "slowdown": [0.1, -0.031, 0.0]}])  # run-to-run variation
    run = run_predictor(predictor, "--calibration", noisy, "--ranks", "2")
    assert run.returncode == 0 and "warning" not in run.stderr, run.stderr
