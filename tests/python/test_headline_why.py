"""Why a headline's best step misses its floor, in time (issue 49): the best contender's timeline point found among a
sweep's, its median breakdown step drawn under its compute-only one, the events kept for --analyze."""
import pandas as pd

from overlap_bench.compare import headline_tables
from overlap_bench.compare import headline_why
from test_headline import fake_compare
from test_headline import spec

POINTS = ["shape=4096x16x512, bucket-mb=25", "shape=4096x16x512, bucket-mb=25, sync=ce",
          "shape=4096x16x512, plan=auto, graph", "shape=1024x32x256, bucket-mb=25, sync=ce",
          "shape=1024x32x256, bucket-mb=64, sync=sharded-ce"]


def test_a_contender_s_point_in_the_sweep():
    strategies = ["nccl", "ce", "sharded-ce"]
    assert headline_why.contender_point(POINTS, "4096x16x512", "nccl", strategies) == POINTS[0]
    assert headline_why.contender_point(POINTS, "4096x16x512", "ce", strategies) == POINTS[1]
    assert headline_why.contender_point(POINTS, "4096x16x512", "planned", strategies) == POINTS[2]
    assert headline_why.contender_point(POINTS, "1024x32x256", "ce", strategies) == POINTS[3]
    # several caps: the label names the cap; a hyphenated strategy stays whole
    assert headline_why.contender_point(POINTS, "1024x32x256", "sharded-ce-64", strategies) == POINTS[4]
    assert headline_why.contender_point(POINTS, "1024x32x256", "sharded-ce", strategies) == POINTS[4]
    assert headline_why.contender_point(POINTS, "1024x32x256", "sharded-ce-25", strategies) is None
    assert headline_why.contender_point(POINTS, "1024x32x256", "planned", strategies) is None


def fake_timeline(path, point, spans):
    """Each mode's steps (iter, span in us) on two ranks: compute-only 0.6 of the span, overlap the span, a bucket on
    the comm stream ending with it, a host event."""
    rows = []
    for mode, scale, origin in (("compute", 0.6, 0), ("overlap", 1.0, 1e6)):
        for it, span in enumerate(spans):
            start = origin + it * 1e5
            for rank in (0, 1):
                rows.append([rank, f"{mode}:compute", "backward", it, 1, start, start + scale * span, point])
                if mode == "overlap":
                    rows.append([rank, "overlap:comm", "allreduce", it, 0, start + span / 2, start + span, point])
                    rows.append([rank, "overlap:host", "enqueue", it, 0, start, start + 5, point])
    other = [0, "overlap:compute", "backward", 0, 1, 5e6, 5e6 + 10, "shape=1024x32x256, bucket-mb=25"]
    pd.DataFrame(rows + [other], columns=headline_why.COLUMNS).to_csv(path, index=False)


def test_the_best_step_beside_its_compute_only_step(tmp_path, capsys):
    folder = fake_compare(tmp_path / "call")
    # the fake's best on 4096x16x512 is ce at 1.33x its floor; its last round's process wrote this timeline
    fake_timeline(folder / "runs" / "r1-p4.timeline.csv", "shape=4096x16x512, bucket-mb=25, sync=ce",
                  [8000, 9500, 9000, 12000, 7000])
    out = tmp_path / "out"
    assert headline_tables.write(folder, out, spec(), {}) == 0
    figure = out / "why-4096x16x512.png"
    assert figure.stat().st_size > 5000 and f"why its best misses its floor: {figure}" in capsys.readouterr().out
    kept = pd.read_csv(out / headline_why.TIMELINE)
    # the median step of five (9000 us: iteration 2) of each mode and the next (two consecutive steps: a carried
    # schedule's tail shows in the second), every rank and lane, nothing of other points
    assert set(kept["iter"]) == {2, 3} and set(kept["point"]) == {"shape=4096x16x512, bucket-mb=25, sync=ce"}
    assert set(kept["lane"]) == {"compute:compute", "overlap:compute", "overlap:comm", "overlap:host"}
    assert len(kept) == 2 * (2 + 3 * 2)
    # the round's whole timeline gone (a published folder keeps none): --analyze draws from the events kept
    (folder / "runs" / "r1-p4.timeline.csv").unlink()
    figure.unlink()
    assert headline_tables.write(folder, out, spec(), {}) == 0
    assert figure.stat().st_size > 5000 and pd.read_csv(out / headline_why.TIMELINE).equals(kept)
    # --analyze of a published folder (DIR/compare/runs beside DIR/why.timeline.csv) into another folder
    (out / headline_why.TIMELINE).rename(folder.parent / headline_why.TIMELINE)
    assert headline_tables.write(folder, tmp_path / "again", spec(), {}) == 0
    assert (tmp_path / "again" / "why-4096x16x512.png").stat().st_size > 5000
    assert pd.read_csv(tmp_path / "again" / headline_why.TIMELINE).equals(kept)


def test_no_figure_without_a_timeline_or_within_the_floor(tmp_path):
    folder = fake_compare(tmp_path / "call")
    assert headline_tables.write(folder, tmp_path / "out", spec(), {}) == 0
    assert not list((tmp_path / "out").glob("why*"))
    table = pd.read_csv(tmp_path / "out" / "headline.csv").assign(best_vs_floor=1.04)
    fake_timeline(tmp_path / "r1-p4.timeline.csv", "shape=4096x16x512, bucket-mb=25, sync=ce", [8000])
    assert headline_why.figures(tmp_path / "r1-p4.timeline.csv", tmp_path / "out", table, ["nccl", "ce"]) == []
