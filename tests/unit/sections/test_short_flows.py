"""Verdicts of §3.6 (short flows, F11-F13) on small hand-made breakdowns."""
import pandas as pd

from conftest import REPO
from hostnet.sections import short_flows
from hostnet.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED

REF = REPO / "data" / "reference"


def bd_frame(key, shares: dict) -> pd.DataFrame:
    """{(value, side): {category: pct}} -> a grid_view.breakdown-shaped frame."""
    rows = [{key: v, "side": side, "category": c, "pct": p, "pct_ci95": 1.0}
            for (v, side), cats in shares.items() for c, p in cats.items()]
    return pd.DataFrame(rows)


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
