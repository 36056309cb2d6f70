"""§3.7 (mixed long/short flows, F14): verdicts on small hand-made summaries, and the run's tpc
split between the long and the short flows."""
import pandas as pd

from conftest import REPO
from hostnet.sections import mixed_flows
from hostnet.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

REF = REPO / "data" / "reference"


def mixed_summary(total, long_, short, ci=1.0):
    rows = [{"long_flow": 1, "short_flows": k, "tpc_gbps": t, "tpc_gbps_ci95": ci, "long_tpc_gbps": lo,
             "long_tpc_gbps_ci95": ci, "short_tpc_gbps": s, "short_tpc_gbps_ci95": ci}
            for k, t, lo, s in zip([0, 1, 4, 16], total, long_, short, strict=True)]
    rows.append({"long_flow": 0, "short_flows": 16, "tpc_gbps": 4.0, "tpc_gbps_ci95": ci, "long_tpc_gbps": 0.0,
                 "long_tpc_gbps_ci95": 0.0, "short_tpc_gbps": 4.0, "short_tpc_gbps_ci95": ci})
    return pd.DataFrame(rows)


def f14(summary):
    return mixed_flows.verdict_table(summary, REF).set_index("id").loc["F14"]


def test_f14_falling_tpc_is_reproduced_with_the_paper_percentages():
    v = f14(mixed_summary([20, 17, 14, 11], [20, 16, 12, 9], [0, 1, 2, 2]))
    assert v.verdict == REPRODUCED
    assert "total tpc 20.0 → 11.0 Gbit/s with 16 short flows (-45 %, paper -43 %)" in v["this run shows"]
    assert "16 short flows 4.00 alone → 2.00 mixed (-50 %, paper -42 %)" in v["this run shows"]


def test_f14_a_cut_far_from_the_papers_size_is_not_reproduced():
    """The claim has a size ("about 43 %"): -71 % is the same direction, not the same finding."""
    v = f14(mixed_summary([25, 22, 15, 7.3], [25, 20, 12, 4.8], [0, 1, 2, 2.5]))
    assert v.verdict == NOT_REPRODUCED
    assert "(-71 %, paper -43 %)" in v["this run shows"] and "more than 15 points from its size" in v["this run shows"]
    assert mixed_flows.reference(REF).loc["long", "before_gbps"] == 42  # the paper's numbers come from data


def test_f14_rising_tpc_is_not_reproduced():
    assert f14(mixed_summary([10, 12, 14, 16], [10, 11, 12, 13], [0, 1, 2, 3])).verdict == NOT_REPRODUCED


def test_f14_drop_within_the_cis_is_inconclusive():
    assert f14(mixed_summary([20, 19, 19, 18], [20, 18, 17, 16], [0, 1, 2, 2], ci=2.0)).verdict == INCONCLUSIVE


def test_class_tpc_splits_the_run_tpc_by_throughput():
    rows = []
    for run, k, total, tpc, flows in (("a", 0, 10.0, 10.0, [("long", 10.0)]),
                                      ("b", 2, 8.0, 16.0, [("long", 6.0), ("short", 1.0), ("short", 1.0)])):
        base = {"run_id": run, "short_flows": k, "long_flow": 1}
        rows += [{**base, "side": "both", "metric": "tpc_gbps", "category": "", "value": tpc},
                 {**base, "side": "both", "metric": "throughput_gbps", "category": "", "value": total}]
        rows += [{**base, "side": "flow", "metric": "flow_throughput_gbps", "category": c, "value": v}
                 for c, v in flows]
    out = mixed_flows.class_tpc(pd.DataFrame(rows)).set_index("run_id")
    assert out.loc["a", "long_tpc_gbps"] == 10.0 and out.loc["a", "short_tpc_gbps"] == 0.0
    assert out.loc["b", "long_tpc_gbps"] == 12.0 and out.loc["b", "short_tpc_gbps"] == 4.0
