"""bench/verdict_stability.py: two campaigns' verdicts side by side. The comparison on small tables,
and on two committed single-flow campaigns judged by notebook 01's section (the fix of 2026-11-27
in between, so they may differ; the bench reports, it does not hide)."""
import pandas as pd
import pytest

from bench import verdict_stability as vs
from conftest import REPO


def _table(pairs):
    return pd.DataFrame(pairs, columns=["id", "verdict"])


def test_opposite_decisions_flip_and_an_undecided_side_is_decided_once():
    a = _table([("F01", "reproduced"), ("F02", "reproduced"), ("F03", "inconclusive"), ("F04", "not testable"),
                ("F05", "in direction"), ("F06", "not reproduced")])
    b = _table([("F01", "in direction"), ("F02", "not reproduced"), ("F03", "not reproduced"),
                ("F04", "not testable"), ("F05", "inconclusive"), ("F07", "reproduced")])
    t = vs.compare(a, b).set_index("id").status.to_dict()
    assert t == {"F01": "same", "F02": "flipped", "F03": "decided once", "F04": "same", "F05": "decided once",
                 "F06": "decided once", "F07": "decided once"}
    s = vs.summary(vs.compare(a, b))
    assert s["flipped"] == 1 and not s["met"] and s["findings"] == 7
    assert vs.summary(vs.compare(a, a))["met"] and vs.side("depends on the testbed") is None


def test_two_stored_campaigns_are_judged_by_their_section_and_written(tmp_path):
    runs = REPO / "data" / "runs"
    a = vs.judged("01-single-flow", runs, "20261127-232153-single-flow-embedded")
    assert {"id", "verdict"} <= set(a.columns) and "F02" in set(a.id)
    table = vs.compare(a, a)
    text = vs.write(tmp_path, "01-single-flow", ["x", "x"], table)
    assert "none flipped) met" in text and (tmp_path / "table.csv").exists()
    with pytest.raises(SystemExit):  # argparse: two campaigns, or --record 2
        vs.main(["01-single-flow", "only-one"])
