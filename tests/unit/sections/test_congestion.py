"""Notebook 11 (§3.10, F17): per-algorithm table with refused algorithms, verdict logic."""
import json

import pandas as pd

from conftest import REPO
from hostnet.charts.encodings import ATTRIBUTED_CAVEAT, CPU_CLOCK_CAVEAT
from hostnet.sections import congestion
from hostnet.analysis.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED

REF = REPO / "data" / "reference"


SPREAD = (0.0, 0.1, -0.1, 0.2, -0.2)


def tidy(tpc: dict, reps: int = 2, bottleneck: str = "receiver") -> tuple[pd.DataFrame, list[dict]]:
    """tpc: {(algorithm, flows): tpc}; throughput = tpc, `bottleneck` the busier side (by 40 points)."""
    rows, manifests = [], []
    busy = {"sender": 60, "receiver": 100} if bottleneck == "receiver" else {"sender": 100, "receiver": 60}
    for (cc, n), value in tpc.items():
        for r in range(reps):
            run = f"{cc}-{n}-{r}"
            manifests.append({"run_id": run, "status": "ok", "bottleneck": bottleneck})
            for metric, side, v in (("tpc_gbps", "both", value + SPREAD[r]), ("throughput_gbps", "both", value),
                                    ("retransmits_count", "sender", 10 * n),
                                    ("cpu_util_pct", "sender", busy["sender"] + SPREAD[r]),
                                    ("cpu_util_pct", "receiver", busy["receiver"] - SPREAD[r])):
                rows.append({"run_id": run, "metric": metric, "side": side, "category": "", "value": v,
                             "congestion_control": cc, "flows": n})
    return pd.DataFrame(rows), manifests


def verdict(tpc, refused=None, bottleneck="receiver", reps=5):
    t, m = tidy(tpc, reps=reps, bottleneck=bottleneck)
    s = congestion.table(t, refused or {})
    return congestion.verdict_table(s, t, m, REF).iloc[0]


def test_refused_algorithm_is_a_row_not_a_gap():
    t, _ = tidy({("cubic", 1): 20, ("bbr", 1): 21})
    s = congestion.table(t, {"dctcp": "sender lacks congestion control dctcp (available: reno cubic bbr)"})
    assert list(s.congestion_control) == ["cubic", "bbr", "dctcp"]
    assert s.set_index("congestion_control").loc["dctcp", "status"] == "not available on this host"
    cubic = s.set_index("congestion_control").loc["cubic"]
    assert cubic.tpc_gbps == 20.05 and cubic.repetitions == 2 and cubic.retransmits_count == 10


def test_f17_little_change_with_receiver_bottleneck_is_reproduced():
    v = verdict({("reno", 1): 20, ("cubic", 1): 21, ("bbr", 1): 22, ("reno", 4): 18, ("cubic", 4): 19},
                {"dctcp": "missing"})
    assert v.verdict == REPRODUCED, v["this run shows"]
    assert "dctcp: not available on this host" in v["this run shows"]
    assert "the receiver is decidedly the busier side at these points" in v["this run shows"]


def test_f17_large_change_is_not_reproduced_and_one_algorithm_or_two_runs_are_inconclusive():
    assert verdict({("reno", 1): 10, ("cubic", 1): 20}).verdict == NOT_REPRODUCED
    assert verdict({("cubic", 1): 10}).verdict == INCONCLUSIVE
    two = verdict({("reno", 1): 23, ("cubic", 1): 20}, reps=2)  # ±12.7 standard errors: across the 15 % line
    assert two.verdict == INCONCLUSIVE and "to decide" in two["this run shows"]


def test_f17_on_a_sender_bound_host_is_not_testable_either_way():
    """The claim explains little change by a receiver-bound host; without that premise a spread proves nothing."""
    for tpc in ({("reno", 1): 29, ("cubic", 1): 10}, {("reno", 1): 20, ("cubic", 1): 21}):
        v = verdict(tpc, bottleneck="sender")
        assert v.verdict == NOT_TESTABLE and "the premise does not hold" in v["this run shows"]
        assert "needs a receiver-bound configuration" in v["this run shows"]


def test_refused_file_round_trip(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / congestion.REFUSED_FILE).write_text(json.dumps({"dctcp": "why"}))
    assert congestion.refused(tmp_path, "c") == {"dctcp": "why"}
    assert congestion.refused(tmp_path, "missing") == {}


def test_recorded_campaign_lists_dctcp_as_unavailable():
    runs, campaign = REPO / "data" / "runs", "20261123-congestion-control-embedded"
    t, _ = congestion.load(runs, campaign)
    s = congestion.table(t, congestion.refused(runs, campaign))
    measured = s[s.status == "measured"]
    assert sorted(zip(measured.congestion_control, measured.flows, strict=True)) == sorted(
        (cc, n) for cc in ("reno", "cubic", "bbr") for n in (1, 4))
    assert (measured.throughput_gbps > 0).all()
    assert s.set_index("congestion_control").loc["dctcp", "status"] == "not available on this host"


def test_f17_leaves_out_an_algorithm_that_makes_the_sender_the_bottleneck():
    """bbr's pacing can make the sender the busier side: its point is not the finding's premise."""
    t, m = tidy({("reno", 1): 20, ("cubic", 1): 21}, reps=3)  # no arm decides with fewer than 3 clean runs
    t2, m2 = tidy({("bbr", 1): 10}, reps=3, bottleneck="sender")
    t = pd.concat([t, t2], ignore_index=True)
    v = congestion.verdict_table(congestion.table(t, {}), t, m + m2, REF).iloc[0]
    assert v.verdict == REPRODUCED
    assert "left out, not receiver-bound (the premise): bbr, 1 flow(s)" in v["this run shows"]
    alone, ma = tidy({("cubic", 1): 20}, reps=3)
    v = congestion.verdict_table(congestion.table(pd.concat([alone, t2]), {}), pd.concat([alone, t2]), ma + m2,
                                 REF).iloc[0]
    assert v.verdict == NOT_TESTABLE and "at least two algorithms" in v["this run shows"]


def test_judge_serves_notebook_14s_f28_on_the_same_campaign():
    """A top-up of a congestion-control campaign decides F17 and notebook 14's F28 together."""
    decided = congestion.judge(REPO / "data" / "runs", "20261128-025145-congestion-control-embedded", REF)
    t = decided.table
    assert list(t.id) == ["F17", "F28"]
    f28 = t.set_index("id").loc["F28"]
    assert f28.verdict == NOT_TESTABLE and "vegas" in f28["this run shows"]  # this kernel offers reno bbr cubic
    assert set(decided.wanted) <= {"F17"}


def test_the_breakdown_names_its_metric_and_the_chart_says_its_caveat():
    t, _ = tidy({("cubic", 1): 20, ("bbr", 1): 21})
    shares = pd.DataFrame([{"run_id": f"{cc}-1-{r}", "metric": "breakdown_attributed_pct", "side": side,
                            "category": c, "value": p, "congestion_control": cc, "flows": 1}
                           for cc in ("cubic", "bbr") for r in range(2) for side in ("sender", "receiver")
                           for c, p in (("data_copy", 60.0), ("tcp/ip", 40.0))])
    summary = congestion.table(t)
    bd = congestion.breakdown(pd.concat([t, shares]))
    assert set(bd.metric) == {"breakdown_attributed_pct"} and set(bd.pct) == {60.0, 40.0}
    stack = congestion.charts(summary, bd, "label")["congestion-control-breakdown"].to_dict()
    assert stack["title"]["subtitle"] == ["median shares; " + ATTRIBUTED_CAVEAT]
    leaf = congestion.breakdown(pd.concat([t, shares.assign(metric="breakdown_pct")]))
    stack = congestion.charts(summary, leaf, "label")["congestion-control-breakdown"].to_dict()
    assert stack["title"]["subtitle"] == ["median shares; " + CPU_CLOCK_CAVEAT]
