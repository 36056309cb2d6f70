"""The time-budget arithmetic (hostnet.analysis.budget), hand-checked against the talk."""
import pytest

from hostnet.analysis import budget


def test_wire_size_adds_preamble_and_gap():
    assert budget.wire_bytes(64) == 84
    assert budget.wire_bytes(budget.frame_for_mtu(1500)) == 1538
    with pytest.raises(ValueError, match="at least 64"):
        budget.wire_bytes(60)


@pytest.mark.parametrize("frame, rate, ns", [(1518, 100, 123.04), (1518, 40, 307.6), (1518, 10, 1230.4),
                                             (64, 10, 67.2), (64, 100, 6.72), (9018, 400, 180.76)])
def test_interval_hand_checked(frame, rate, ns):
    assert budget.interval_ns(frame, rate) == pytest.approx(ns)


def test_packet_rate_and_cycles():
    assert budget.packets_per_s(64, 10) / 1e6 == pytest.approx(14.88, abs=0.005)
    assert budget.cycles(67.2, 3000) == pytest.approx(201.6)
    assert budget.copy_bound_gbps(1.0) == pytest.approx(8.589934592)
    with pytest.raises(ValueError):
        budget.interval_ns(64, 0)


def test_table_covers_every_rate_and_frame():
    t = budget.table(clock_mhz=2600)
    assert len(t) == len(budget.RATES_GBPS) * len(budget.FRAME_BYTES)
    row = t[(t.rate_gbps == 100) & (t.frame_bytes == 1518)].iloc[0]
    assert row.interval_ns == pytest.approx(123.04) and row.cycles == pytest.approx(123.04 * 2.6)
    assert "cycles" not in budget.table().columns
