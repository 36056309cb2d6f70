"""Verdicts of §3.5 (packet loss, F10) on small hand-made summaries."""
import math

import pandas as pd

from conftest import REPO
from hostnet.sections import packet_loss
from hostnet.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

REF = REPO / "data" / "reference"
NAN = math.nan


def bd_frame(key, shares: dict) -> pd.DataFrame:
    """{(value, side): {category: pct}} -> a grid_view.breakdown-shaped frame."""
    rows = [{key: v, "side": side, "category": c, "pct": p, "pct_ci95": 1.0}
            for (v, side), cats in shares.items() for c, p in cats.items()]
    return pd.DataFrame(rows)


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
