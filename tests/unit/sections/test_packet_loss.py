"""Verdicts of §3.5 (packet loss, F10) on small hand-made runs where the answer is known."""
import math

import pandas as pd

from conftest import REPO
from hostnet.sections import packet_loss
from hostnet.analysis.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

REF = REPO / "data" / "reference"
NAN = math.nan
RATES = [0, 0.0001, 0.001, 0.01]


def loss_runs(tpc, spread, retrans, reps=3):
    """Per loss rate: `reps` runs around tpc (± spread) and retransmits (± 10 %)."""
    rows = []
    for rate, t, s, r in zip(RATES, tpc, spread, retrans, strict=True):
        for k in range(reps):
            e = (k - (reps - 1) / 2) / max(1, (reps - 1) / 2)  # -1 … +1
            run = f"{rate}-{k}"
            rows.append({"run_id": run, "loss_rate": rate, "metric": "tpc_gbps", "side": "both", "category": "",
                         "value": t + s * e})
            rows.append({"run_id": run, "loss_rate": rate, "metric": "retransmits_count", "side": "sender",
                         "category": "", "value": r * (1 + 0.1 * e)})
    return pd.DataFrame(rows)


def f10(tidy):
    return packet_loss.verdict_table(tidy, REF).set_index("id").loc["F10"]


def test_f10_lower_tpc_with_more_retransmissions_is_reproduced():
    v = f10(loss_runs([20, 19, 15, 8], [0.5] * 4, [0, 10, 100, 1000]))
    assert v.verdict == REPRODUCED
    assert "tpc without loss → at 1/100: 20.0 → 8.0 Gbit/s" in v["this run shows"]


def test_f10_tpc_up_under_loss_is_not_reproduced():
    assert f10(loss_runs([10, 11, 12, 14], [0.5] * 4, [0, 10, 100, 1000])).verdict == NOT_REPRODUCED


def test_f10_missing_retransmission_counts_are_inconclusive():
    v = f10(loss_runs([26, 16, 13, 10], [0.5] * 4, [NAN] * 4))
    assert v.verdict == INCONCLUSIVE and "at least 3 clean runs" in v["this run shows"]


def test_f10_drop_within_the_spread_is_inconclusive():
    v = f10(loss_runs([20, 19, 18, 18.5], [2, 2, 2, 2], [0, 10, 100, 1000]))
    assert v.verdict == INCONCLUSIVE and "to decide" in v["this run shows"]


def test_f10_without_a_loss_free_point_is_inconclusive():
    t = loss_runs([20, 19, 15, 8], [0.5] * 4, [0, 10, 100, 1000])
    v = f10(t[t.loss_rate > 0])
    assert v.verdict == INCONCLUSIVE and "loss-free point" in v["this run shows"]
