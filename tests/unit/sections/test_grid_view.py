"""hostnet.sections.grid_view: points whose runs were all flagged (or too short) are topped up
(comparisons themselves are verdicts.py's, tested in tests/unit/analysis/test_verdicts.py)."""
from hostnet.sections import grid_view, packet_loss


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
