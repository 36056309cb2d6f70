"""hostnet.sections.grid_view: "clearly below" needs both intervals apart; points whose runs were
all flagged (or too short) are topped up."""
import math

from hostnet.sections import grid_view, packet_loss

NAN = math.nan


def test_clearly_below_needs_both_intervals_apart():
    assert grid_view.clearly_below(8, 1, 10, 0.5)
    assert not grid_view.clearly_below(9, 1, 10, 0.5)
    assert not grid_view.clearly_below(1, NAN, 10, 0.5)  # one repetition: no CI, no claim


def test_points_whose_runs_were_all_flagged_are_topped_up():
    spec = packet_loss.spec([0, 0.01], repetitions=2)
    manifests = [{"status": "ok", "contaminated": True, "point": {"id": "a", "config": "all-opts", "loss_rate": 0.0}},
                 {"status": "ok", "contaminated": False, "point": {"id": "b", "config": "all-opts", "loss_rate": 0.0}},
                 {"status": "ok", "contaminated": True, "point": {"id": "c", "config": "all-opts", "loss_rate": 0.01}},
                 {"status": "failed", "point": {"id": "c", "config": "all-opts", "loss_rate": 0.01}}]
    assert grid_view.lacking_points(spec, manifests, min_clean=1) == [{"config": "all-opts", "loss_rate": 0.01}]
    assert grid_view.lacking_points(spec, manifests[:2] + [{**manifests[2], "contaminated": False}], 1) == []
    assert len(grid_view.lacking_points(spec, manifests, min_clean=2)) == 2  # one clean run has no CI
    # a run whose window was too short is left out of analysis, so it does not count as clean either
    short = manifests[:2] + [{**manifests[2], "contaminated": False, "short_window": "window 0.4 s of 2 s"}]
    assert grid_view.lacking_points(spec, short, 1) == [{"config": "all-opts", "loss_rate": 0.01}]
