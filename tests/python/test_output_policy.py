"""One output policy for every binary and script (issue 37, classes 1 and 2): an output that is a symbolic link, a
device, or one of the run's own inputs is refused before any work (exit 2, one line naming the option), and so is one
file named twice in two spellings; whatever sat at the path is left as it was."""
import os

import pytest

from conftest import built, REPO, run, tool
from overlap_bench.core import ob_tool
from test_predict import calibration, predict


@pytest.fixture(scope="module")
def ob_trace(build_dir):
    return built(build_dir, "common/ob_trace")


def one_line_naming(result, option):
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and option in lines[0], result.stderr
    return lines[0]


TIMELINE = "rank,lane,name,iter,chunk,start_us,end_us\n0,seq:thread 0,compute,0,0,0,10\n"


def test_a_link_given_as_an_output_stays_a_link(phase2, tmp_path):
    target = tmp_path / "kept.csv"
    target.write_text("kept\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    line = one_line_naming(run(phase2, "--iters", "1", "--warmup", "0", "--csv", link), "--csv")
    assert "symbolic link" in line
    assert link.is_symlink() and target.read_text() == "kept\n"


def test_one_file_in_two_spellings_is_refused_before_the_run(phase2, tmp_path):
    line = one_line_naming(run(phase2, "--iters", "1", "--csv", "s.csv", "--timeline", "./s.csv", cwd=tmp_path),
                           "--timeline")
    assert "a path of its own" in line and not any(tmp_path.iterdir())


def test_ob_trace_never_replaces_its_input_a_link_or_a_device(ob_trace, tmp_path):
    timeline = tmp_path / "in.csv"
    timeline.write_text(TIMELINE)
    assert "reads" in one_line_naming(run(ob_trace, timeline, "-o", timeline), "--output")
    assert "reads" in one_line_naming(run(ob_trace, timeline, "-o", tmp_path / "." / "in.csv"), "--output")
    assert timeline.read_text() == TIMELINE
    link = tmp_path / "t.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    assert "symbolic link" in one_line_naming(run(ob_trace, timeline, "-o", link), "--output")
    if os.path.exists("/dev/full"):
        assert "regular file" in one_line_naming(run(ob_trace, timeline, "-o", "/dev/full"), "--output")


def test_phase4_predict_never_writes_over_its_calibration(predictor, tmp_path):
    cal = calibration(tmp_path)
    before = cal.read_text()
    result = run(predictor, "--calibration", cal, "--csv", cal)
    assert "--calibration reads" in one_line_naming(result, "--csv") and cal.read_text() == before


def test_predict_py_never_writes_over_its_calibration_or_one_output_twice(predictor, tmp_path):
    cal = calibration(tmp_path)
    before = cal.read_text()
    assert "the calibration reads" in one_line_naming(predict(predictor, cal, "--csv", cal), "--csv")
    assert cal.read_text() == before
    result = predict(predictor, cal, "--csv", tmp_path / "x.png", "-o", tmp_path / "x.png")
    assert "a path of its own" in one_line_naming(result, "--output")
    assert not (tmp_path / "x.png").exists()


def test_a_models_prediction_never_writes_over_its_inputs_or_one_output_twice(predictor, tmp_path):
    """--model's outputs: the steps CSV is neither the calibration, the model's config nor the prediction CSV."""
    cal = calibration(tmp_path)
    config = tmp_path / "model.config.json"
    config.write_text((REPO / "tests" / "data" / "models" / "gpt2.config.json").read_text())
    before = cal.read_text(), config.read_text()
    result = run(predictor, "--calibration", cal, "--model", config, "--layers-csv", config)
    assert "--model reads" in one_line_naming(result, "--layers-csv")
    result = run(predictor, "--calibration", cal, "--model", "gpt2", "--csv", tmp_path / "a.csv", "--layers-csv",
                 tmp_path / "./a.csv")
    one_line_naming(result, "--layers-csv")
    result = predict(predictor, cal, "--model", "gpt2", "--csv", tmp_path / "b.csv", "--layers-csv", cal)
    assert "the calibration reads" in one_line_naming(result, "--layers-csv")
    assert (cal.read_text(), config.read_text()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.json", "model.config.json"]


def test_check_prediction_never_writes_over_a_measured_summary(predictor, tmp_path):
    measured = tmp_path / "m.csv"
    measured.write_text("kept\n")
    result = run(*tool("check_prediction.py"), "--calibrations", calibration(tmp_path),
                 "--measured", measured, "--csv", measured, "--predictor", predictor)
    assert "--measured reads" in one_line_naming(result, "--csv") and measured.read_text() == "kept\n"


def test_the_scripts_policy_refuses_links_devices_inputs_and_two_spellings(tmp_path):
    (tmp_path / "a.csv").write_text("x")
    (tmp_path / "l.csv").symlink_to(tmp_path / "a.csv")
    cases = [([("--csv", tmp_path / "l.csv")], [], "symbolic link"),
             ([("--csv", tmp_path)], [], "regular file"),
             ([("--csv", tmp_path / "b.csv"), ("-o", tmp_path / "." / "b.csv")], [], "a path of its own"),
             ([("--csv", tmp_path / "a.csv")], [("the input", tmp_path / "l.csv")], "the input reads")]
    for outputs, inputs, words in cases:
        with pytest.raises(ob_tool.UsageError, match=words):
            ob_tool.require_outputs(outputs, inputs)
    ob_tool.require_outputs([("--csv", tmp_path / "new.csv"), ("-o", tmp_path / "new.png")],
                           [("in", tmp_path / "a.csv")])  # all fine: nothing raised
