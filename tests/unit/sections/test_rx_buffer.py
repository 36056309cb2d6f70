import pandas as pd

from conftest import REPO
from hostnet.sections import rx_buffer
from hostnet.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED

REF = REPO / "data" / "reference"


def summary(tpc, tpc_ci, lat):
    kb = [100, 200, 400, 800]
    return pd.DataFrame({"rx_buffer_kb": kb, "tpc_gbps": tpc, "tpc_gbps_ci95": tpc_ci,
                         "latency_avg_usec": lat, "latency_p99_usec": [x * 3 for x in lat]})


def verdict(s):
    return rx_buffer.verdict_table(s, REF).set_index("id")


def test_latency_up_and_tpc_down_beyond_noise_is_reproduced():
    v = verdict(summary([10, 20, 15, 14], [0.5] * 4, [10, 20, 80, 400]))
    assert v.loc["F07", "verdict"] == REPRODUCED
    assert "10 µs at 100 KB → 400 µs at 800 KB" in v.loc["F07", "this run shows"]
    assert v.loc["F08", "verdict"] == NOT_TESTABLE


def test_tpc_drop_within_the_confidence_intervals_is_inconclusive():
    v = verdict(summary([10, 20, 19, 18.5], [3, 3, 3, float("nan")], [10, 20, 80, 400]))
    assert v.loc["F07", "verdict"] == INCONCLUSIVE and "within the 95 % CIs" in v.loc["F07", "this run shows"]


def test_flat_latency_is_not_reproduced():
    assert verdict(summary([10, 20, 15, 14], [0.5] * 4, [10, 11, 12, 12])).loc["F07", "verdict"] == NOT_REPRODUCED


def test_recorded_sweep_table_has_every_size():
    tidy, manifests = rx_buffer.load(REPO / "data" / "runs", "20261123-rx-buffer-embedded")
    t = rx_buffer.table(tidy)
    assert list(t.rx_buffer_kb) == rx_buffer.SIZES_KB
    assert (t.latency_avg_usec > 0).all() and (t.tpc_gbps > 0).all()
    assert t.latency_p99_usec.iloc[-1] > t.latency_p99_usec.iloc[0]  # the queue grows with the buffer
