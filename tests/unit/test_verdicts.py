import pandas as pd

from conftest import REPO
from hostnet import verdicts

FINDINGS = verdicts.load_findings(REPO / "data" / "reference")


def tidy(tpc, util, breakdown):
    rows = []

    def add(cfg, side, metric, value, category=""):
        rows.append({"run_id": cfg, "campaign": "c", "experiment": "single-flow", "config": cfg,
                     "repetition": 0, "side": side, "metric": metric, "category": category, "value": value})
    for cfg, v in tpc.items():
        add(cfg, "both", "tpc_gbps", v)
    for (cfg, side), v in util.items():
        add(cfg, side, "cpu_util_pct", v)
    for (cfg, side, cat), v in breakdown.items():
        add(cfg, side, "breakdown_pct", v, cat)
    return pd.DataFrame(rows)


def verdict_of(table, fid):
    return table.set_index("id").loc[fid, "verdict"]


def test_paper_like_data_is_reproduced():
    t = tidy({"no-opts": 5, "tsogro": 15, "tsogro+jumbo": 27, "all-opts": 41},
             {(c, s): (100 if s == "sender" else 150) for c in ("no-opts", "all-opts") for s in ("sender", "receiver")},
             {("all-opts", "sender", "data_copy"): 50, ("all-opts", "sender", "tcp/ip"): 10,
              ("all-opts", "receiver", "data_copy"): 55, ("all-opts", "receiver", "etc"): 80,
              ("no-opts", "sender", "tcp/ip"): 40, ("no-opts", "sender", "data_copy"): 5,
              ("no-opts", "receiver", "tcp/ip"): 55, ("no-opts", "receiver", "netdev"): 9})
    v = verdicts.single_flow(t, FINDINGS)
    for fid in ("F02", "F03", "F04", "F05", "F06"):
        assert verdict_of(v, fid) == verdicts.REPRODUCED, v
    assert verdict_of(v, "F01") == verdicts.NOT_TESTABLE


def test_contrary_data_is_not_reproduced_with_numbers():
    t = tidy({"no-opts": 12, "tsogro": 23.1, "tsogro+jumbo": 20.0, "all-opts": 23},
             {("tsogro", "sender"): 98, ("tsogro", "receiver"): 80},
             {("all-opts", "sender", "tcp/ip"): 50, ("all-opts", "sender", "data_copy"): 20,
              ("all-opts", "receiver", "data_copy"): 55, ("all-opts", "receiver", "tcp/ip"): 5})
    v = verdicts.single_flow(t, FINDINGS).set_index("id")
    assert v.loc["F02", "verdict"] == verdicts.NOT_REPRODUCED
    assert "> tsogro+jumbo 20.00" in v.loc["F02", "this run shows"]
    assert v.loc["F03", "verdict"] == verdicts.NOT_REPRODUCED
    assert v.loc["F04", "verdict"] == verdicts.NOT_REPRODUCED
    assert "tsogro: sender 98% > receiver 80%" in v.loc["F04", "this run shows"]
    assert v.loc["F05", "verdict"] == verdicts.NOT_REPRODUCED


def test_differences_within_noise_are_inconclusive():
    t = tidy({"no-opts": 12, "tsogro": 23.0, "tsogro+jumbo": 23.2, "all-opts": 30},
             {("tsogro", "sender"): 98, ("tsogro", "receiver"): 97}, {})
    v = verdicts.single_flow(t, FINDINGS).set_index("id")
    assert v.loc["F03", "verdict"] == verdicts.INCONCLUSIVE and "≈" in v.loc["F03", "this run shows"]
    assert v.loc["F02", "verdict"] == verdicts.INCONCLUSIVE
    assert v.loc["F04", "verdict"] == verdicts.INCONCLUSIVE


def test_attributed_breakdown_is_judged_as_is():
    t = tidy({"no-opts": 5, "tsogro": 15, "tsogro+jumbo": 27, "all-opts": 41}, {}, {})
    rows = []
    for side in ("sender", "receiver"):
        for cat, v in (("data_copy", 50), ("etc", 5), ("netdev", 30)):
            rows.append({"run_id": "x", "campaign": "c", "experiment": "single-flow", "config": "all-opts",
                         "repetition": 0, "side": side, "metric": "breakdown_attributed_pct", "category": cat,
                         "value": v})
    t = pd.concat([t, pd.DataFrame(rows)], ignore_index=True)
    v = verdicts.single_flow(t, FINDINGS).set_index("id")
    assert v.loc["F05", "verdict"] == verdicts.REPRODUCED
    assert "attributed through the call chain" in v.loc["F05", "this run shows"]
