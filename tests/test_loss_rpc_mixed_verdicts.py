"""Verdicts of §3.5 (F10), §3.6 (F11-F13) and §3.7 (F14) on small hand-made summaries."""
import math

import pandas as pd

from conftest import REPO
from hostnet import grid_view, mixed_flows, packet_loss, short_flows
from hostnet.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED

REF = REPO / "data" / "reference"
NAN = math.nan


def bd_frame(key, shares: dict) -> pd.DataFrame:
    """{(value, side): {category: pct}} -> a grid_view.breakdown-shaped frame."""
    rows = [{key: v, "side": side, "category": c, "pct": p, "pct_ci95": 1.0}
            for (v, side), cats in shares.items() for c, p in cats.items()]
    return pd.DataFrame(rows)


# --- F10: packet loss -------------------------------------------------------------------------

def loss_summary(tpc, ci, retrans):
    rates = [0, 0.0001, 0.001, 0.01]
    return pd.DataFrame({"loss_rate": rates, "tpc_gbps": tpc, "tpc_gbps_ci95": ci,
                         "retransmits_count": retrans, "retrans_pct": [r / 1000 for r in retrans]})


LOSS_BD = bd_frame("loss_rate", {(0, "sender"): {"tcp/ip": 20}, (0.01, "sender"): {"tcp/ip": 30}})


def f10(summary):
    return packet_loss.verdict_table(summary, LOSS_BD, REF).set_index("id").loc["F10"]


def test_f10_lower_tpc_with_more_retransmissions_is_reproduced():
    v = f10(loss_summary([20, 19, 15, 8], [1, 1, 1, 1], [0, 10, 100, 1000]))
    assert v.verdict == REPRODUCED
    assert "tpc 20.0 Gbit/s without loss → 8.0 at 1/100 (-60 %)" in v["this run shows"]
    assert "sender tcp/ip share 20 % → 30 %" in v["this run shows"]


def test_f10_tpc_up_under_loss_is_not_reproduced():
    assert f10(loss_summary([10, 11, 12, 14], [0.5] * 4, [0, 10, 100, 1000])).verdict == NOT_REPRODUCED


def test_f10_missing_retransmission_counts_are_inconclusive():
    v = f10(loss_summary([26, 16, 13, 10], [1, 1, 1, 1], [NAN, NAN, NAN, NAN]))
    assert v.verdict == INCONCLUSIVE


def test_f10_drop_within_the_cis_is_inconclusive():
    v = f10(loss_summary([20, 19, 18, 18], [2, 2, 2, NAN], [0, 10, 100, 1000]))
    assert v.verdict == INCONCLUSIVE and "within the 95 % CIs" in v["this run shows"]


# --- F11-F13: short flows ----------------------------------------------------------------------

def rpc_bd(at4, at16, at64):
    shares = {}
    for size, cats in ((4096, at4), (16384, at16), (65506, at64)):
        for side in ("sender", "receiver"):
            shares[(size, side)] = cats
    return bd_frame("rpc_size", shares)


PROTO = {"tcp/ip": 30, "sched": 20, "data_copy": 10, "etc": 40}
COPY = {"data_copy": 45, "tcp/ip": 20, "sched": 10, "etc": 25}
MIXED = {"data_copy": 25, "tcp/ip": 30, "sched": 5, "etc": 40}


def rpc_verdicts(bd):
    return short_flows.verdict_table(bd, REF).set_index("id").verdict


def test_f11_f12_paper_pattern_is_reproduced():
    v = rpc_verdicts(rpc_bd(PROTO, COPY, COPY))
    assert v["F11"] == REPRODUCED and v["F12"] == REPRODUCED and v["F13"] == NOT_TESTABLE


def test_f11_f12_data_copy_everywhere_or_nowhere_is_not_reproduced():
    v = rpc_verdicts(rpc_bd(COPY, PROTO, PROTO))
    assert v["F11"] == NOT_REPRODUCED and v["F12"] == NOT_REPRODUCED


def test_f11_f12_partial_patterns():
    # 4 KB: tcp/ip + sched (35 %, sched absent = 0) just above data copy: reproduced;
    # 64 KB copy-dominated but 16 KB not: inconclusive
    v = rpc_verdicts(rpc_bd({"tcp/ip": 35, "data_copy": 30, "etc": 35}, PROTO, COPY))
    assert v["F11"] == REPRODUCED and v["F12"] == INCONCLUSIVE


def test_f11_another_layer_above_tcp_ip_and_sched_is_not_reproduced():
    """Data copy is not dominant, but netdev is (as on veth with RPS): the claim's second half fails."""
    netdev = {"netdev": 60, "tcp/ip": 15, "sched": 8, "data_copy": 2, "etc": 15}
    t = short_flows.verdict_table(rpc_bd(netdev, COPY, COPY), REF).set_index("id")
    assert t.loc["F11", "verdict"] == NOT_REPRODUCED
    assert "sender 23 % vs netdev 60 %" in t.loc["F11", "this run shows"]


def test_f11_etc_is_not_a_rival_and_a_missing_side_is_inconclusive():
    assert rpc_verdicts(rpc_bd({"tcp/ip": 20, "sched": 5, "data_copy": 10, "etc": 65}, COPY, COPY))["F11"] == REPRODUCED
    bd = rpc_bd(PROTO, COPY, COPY)
    bd = bd[~((bd.rpc_size == 4096) & (bd.side == "receiver"))]
    assert rpc_verdicts(bd)["F11"] == INCONCLUSIVE


def test_f12_shows_the_data_copy_share_by_size():
    t = short_flows.verdict_table(rpc_bd(PROTO, MIXED, COPY), REF).set_index("id")
    assert "data_copy share by size: sender 10 → 25 → 45 %" in t.loc["F12", "this run shows"]
    assert t.loc["F12", "verdict"] == INCONCLUSIVE


# --- F14: mixed flows --------------------------------------------------------------------------

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


def test_one_rule_says_which_runs_analysis_leaves_out():
    from hostnet import sections, store
    ms = [{"run_id": "a", "status": "ok"}, {"run_id": "b", "status": "ok", "contaminated": True},
          {"run_id": "c", "status": "ok", "short_window": "0.4 s"}, {"run_id": "d", "status": "failed"}]
    assert [store.flagged(m) for m in ms] == ["", "foreign load", "short window", ""]
    assert [store.usable(m) for m in ms] == [True, False, False, False]
    q = sections.run_quality(ms)
    assert (q["ok"], q["failed"], q["contaminated"], q["short_window"]) == (3, 1, 1, 1)


def test_notebooks_declare_the_profile_parameters_and_their_grids():
    from hostnet import notebooks
    common = {"mode", "campaign", "config", "duration", "warmup", "repetitions", "runs_dir", "reference_dir",
              "figures_dir", "include_contaminated", "testbed_name"}
    for name, grid in (("06-packet-loss", "loss_rates"), ("07-short-flows", "rpc_sizes"),
                       ("08-mixed-flows", "short_flows")):
        declared = notebooks.declared_parameters(REPO / "notebooks" / f"{name}.ipynb")
        assert common | {grid} <= set(declared), name  # papermill could not parse a line otherwise
