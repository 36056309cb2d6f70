"""/proc/stat (hostnet.parsers.procstat): per-CPU utilisation from captured snapshots, busy as
wall time minus idle when the snapshot times are known, and bad input."""
import pytest

from conftest import fixture_text
from hostnet.parsers import ParseError
from hostnet.parsers.procstat import (BUSY_FIELDS, cpu_utilization, parse_proc_stat, parse_snapshot_times,
                                      proc_stat_interval)


def test_proc_stat_utilization_from_captured_snapshots():
    before = parse_proc_stat(fixture_text("proc_stat_before.txt"))
    after = parse_proc_stat(fixture_text("proc_stat_after.txt"))
    assert set(before) == {0, 1}
    for cpu in (0, 1):
        u = cpu_utilization(before, after, [cpu])
        assert 0 <= u["busy_pct"] <= 100
        assert u["busy_pct"] == pytest.approx(
            sum(u[f"{f}_pct"] for f in ("user", "nice", "system", "irq", "softirq", "steal")))
    both = cpu_utilization(before, after, [0, 1])
    assert both["busy_pct"] == pytest.approx(
        cpu_utilization(before, after, [0])["busy_pct"] + cpu_utilization(before, after, [1])["busy_pct"])


def test_busy_is_wall_minus_idle_when_the_snapshot_times_are_known():
    """A flow paced to 5 Gbit/s (captured): tick-sampled busy fields say 10.5 % and 7.8 %, wall time
    minus NOHZ-measured idle says 20.4 % and 15.9 % (a SCHED_IDLE spinner found 19-23 %, bench/)."""
    before = parse_proc_stat(fixture_text("proc_stat_paced5g_before.txt"))
    after = parse_proc_stat(fixture_text("proc_stat_paced5g_after.txt"))
    interval = parse_snapshot_times(fixture_text("proc_stat_paced5g_monotonic_s.txt"))
    assert interval == pytest.approx(3.529434)
    ticks = [cpu_utilization(before, after, [c])["busy_pct"] for c in (0, 1)]
    wall = [cpu_utilization(before, after, [c], interval, 100) for c in (0, 1)]
    assert ticks == [pytest.approx(10.51, abs=0.01), pytest.approx(7.76, abs=0.01)]
    assert [u["busy_pct"] for u in wall] == [pytest.approx(20.38, abs=0.01), pytest.approx(15.85, abs=0.01)]
    for u in wall:  # the busy fields split the busy time; with idle they make up the interval
        assert u["busy_pct"] == pytest.approx(sum(u[f"{f}_pct"] for f in BUSY_FIELDS))
        assert u["busy_pct"] + u["idle_pct"] + u["iowait_pct"] == pytest.approx(100)
    files = {"proc_stat_monotonic_s.txt": fixture_text("proc_stat_paced5g_monotonic_s.txt"), "clk_tck.txt": "100\n"}
    assert proc_stat_interval(files) == (pytest.approx(3.529434), 100)
    assert proc_stat_interval({"clk_tck.txt": "100\n"}) == (None, None)  # runs recorded before: ticks
    # idle measured beyond the interval (clock skew between reads) is clamped, never negative busy
    assert cpu_utilization(before, after, [0], interval / 2, 100)["busy_pct"] == 0.0
    with pytest.raises(ParseError, match="not after the first"):
        parse_snapshot_times("5.0\n4.0\n")


def test_proc_stat_errors():
    with pytest.raises(ParseError, match="no per-CPU"):
        parse_proc_stat("intr 1 2 3\n")
    with pytest.raises(ParseError, match=":2"):
        parse_proc_stat("cpu  1 2 3 4\ncpuX 1 2 3 4\n", "stat")
    snap = parse_proc_stat("cpu0 1 0 1 10\n")
    with pytest.raises(ParseError, match="no time elapsed"):
        cpu_utilization(snap, snap, [0])
    with pytest.raises(ParseError, match="CPU 3 missing"):
        cpu_utilization(snap, snap, [3])
