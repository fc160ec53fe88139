"""phase4_model (issue 35's CPU part): a preset's and a shipped config.json's gradient tensors and memory in words
and as a CSV, and a bad config refused with exit 2 naming the key, before anything is written."""
import json

import pandas as pd
import pytest

from conftest import REPO, built, run

MODELS = REPO / "tests" / "data" / "models"


@pytest.fixture(scope="module")
def model(build_dir):
    return built(build_dir, "phase4_chunked_nccl/phase4_model")


def test_a_shipped_config_gives_its_tensors_in_backward_order(model, tmp_path):
    csv = tmp_path / "llama.csv"
    result = run(model, "--model", MODELS / "llama3-8b.config.json", "--seq", "2048", "--csv", csv)
    assert result.returncode == 0, result.stderr
    assert "parameters: 8030261248" in result.stdout
    assert "the backward completes lm_head first" in result.stdout and "embed_tokens last" in result.stdout
    tensors = pd.read_csv(csv)
    assert len(tensors) == 291 and tensors["elements"].sum() == 8030261248
    assert list(tensors["index"]) == list(range(291))
    assert tensors["cumulative_grad_mib"].iloc[-1] == pytest.approx(8030261248 * 4 / 2**20, rel=1e-6)
    assert tensors.loc[tensors["name"] == "block 0 attn.k", "cols"].item() == 1024


def test_the_memory_counts_the_strategys_buffers_and_blocks_cut_the_model(model):
    one = run(model, "--model", "gpt2", "--sync", "nccl").stdout
    sharded = run(model, "--model", "gpt2", "--sync", "sharded").stdout
    assert "(1 gradient-sized buffer)" in one and "(2.5 gradient-sized buffers)" in sharded
    part = run(model, "--model", "llama3-8b", "--blocks", "2")
    assert part.returncode == 0 and "the first 2 of 32 blocks" in part.stdout


@pytest.mark.parametrize("change, key", [
    ({"num_attention_heads": 0}, "num_attention_heads"),
    ({"num_attention_heads": 30}, "num_attention_heads"),
    ({"vocab_size": None}, "vocab_size"),
    ({"num_key_value_heads": 5}, "num_key_value_heads"),
])
def test_a_bad_config_exits_2_naming_the_key(model, tmp_path, change, key):
    config = json.loads((MODELS / "llama3-8b.config.json").read_text())
    config.update(change)
    config = {k: v for k, v in config.items() if v is not None}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    csv = tmp_path / "out.csv"
    result = run(model, "--model", path, "--csv", csv)
    assert result.returncode == 2, result.stderr
    assert f"'{key}'" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not csv.exists()


def test_bad_usage_exits_2_before_any_work(model, tmp_path):
    for args in (["--model", "llama-9000"], ["--model", "gpt2", "--blocks", "13"], ["--model", "gpt2", "--seq", "0"],
                 ["--model", "gpt2", "--sync", "ring"]):
        result = run(model, *args)
        assert result.returncode == 2, (args, result.stderr)
    (tmp_path / "not.json").write_text("{")
    assert run(model, "--model", tmp_path / "not.json").returncode == 2


def test_the_output_policy_holds_for_phase4_model(model, tmp_path):
    """A config.json given as --csv, a link, or a device is refused before any work, the file left as it was."""
    config = tmp_path / "config.json"
    config.write_text((MODELS / "gpt2.config.json").read_text())
    result = run(model, "--model", config, "--csv", config)
    assert result.returncode == 2 and "--csv" in result.stderr
    assert json.loads(config.read_text())["n_embd"] == 768
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "elsewhere.csv")
    result = run(model, "--model", "gpt2", "--csv", link)
    assert result.returncode == 2 and "symbolic link" in result.stderr and link.is_symlink()
