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
            sum(u[f"{f}_pct"] for f in ("user", "nice", "system", "irq", "softirq")))
    both = cpu_utilization(before, after, [0, 1])
    assert both["busy_pct"] == pytest.approx(
        cpu_utilization(before, after, [0])["busy_pct"] + cpu_utilization(before, after, [1])["busy_pct"])


def test_busy_is_wall_minus_idle_when_the_snapshot_times_are_known():
    """A flow paced to 5 Gbit/s (captured): tick-sampled busy fields say 10.5 % and 7.8 %, wall time
    minus NOHZ-measured idle (and CPU 1's one tick of steal) says 20.4 % and 15.6 % (a SCHED_IDLE
    spinner found 19-23 %, bench/)."""
    before = parse_proc_stat(fixture_text("proc_stat_paced5g_before.txt"))
    after = parse_proc_stat(fixture_text("proc_stat_paced5g_after.txt"))
    interval = parse_snapshot_times(fixture_text("proc_stat_paced5g_monotonic_s.txt"))
    assert interval == pytest.approx(3.529434)
    ticks = [cpu_utilization(before, after, [c])["busy_pct"] for c in (0, 1)]
    wall = [cpu_utilization(before, after, [c], interval, 100) for c in (0, 1)]
    assert ticks == [pytest.approx(10.51, abs=0.01), pytest.approx(7.45, abs=0.01)]
    assert [u["busy_pct"] for u in wall] == [pytest.approx(20.38, abs=0.01), pytest.approx(15.57, abs=0.01)]
    for u in wall:  # the busy fields split the busy time; with idle they make up the interval
        assert u["busy_pct"] == pytest.approx(sum(u[f"{f}_pct"] for f in BUSY_FIELDS))
        assert u["busy_pct"] + u["idle_pct"] + u["iowait_pct"] + u["steal_pct"] == pytest.approx(100)
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


def _cut_cpu_line(text: str, cpu: int, fields: int) -> str:
    """The snapshot with one CPU's line cut after `fields` numbers."""
    return "".join(" ".join(ln.split()[:fields + 1]) + "\n" if ln.startswith(f"cpu{cpu} ") else ln
                   for ln in text.splitlines(keepends=True))


def test_a_cpu_line_cut_short_in_the_before_snapshot_is_refused_not_zero_filled():
    """Zero-filled, the missing iowait..steal of the before snapshot became the whole since-boot
    softirq time of the window: CPU 1 came out nearly fully busy."""
    cut = _cut_cpu_line(fixture_text("proc_stat_before.txt"), 1, 4)
    with pytest.raises(ParseError, match=r"proc_stat_before.txt:3: 4 fields where the lines above have 10"):
        parse_proc_stat(cut, "proc_stat_before.txt")


def test_snapshots_must_have_the_same_cpus_and_the_same_fields():
    after = parse_proc_stat(fixture_text("proc_stat_after.txt"))
    one_cpu = parse_proc_stat("".join(ln for ln in fixture_text("proc_stat_before.txt").splitlines(keepends=True)
                                      if not ln.startswith("cpu1")))
    with pytest.raises(ParseError, match=r"different CPUs: \[0\] before, \[0, 1\] after"):
        cpu_utilization(one_cpu, after, [0])
    # an older kernel's 8 fields on every line parse; against a 10-field snapshot they are refused
    eight = parse_proc_stat("".join(" ".join(ln.split()[:9]) + "\n" if ln.startswith("cpu") else ln
                                    for ln in fixture_text("proc_stat_before.txt").splitlines(keepends=True)))
    assert set(eight[0]) == set(BUSY_FIELDS + ("idle", "iowait", "steal"))
    with pytest.raises(ParseError, match="CPU 0 has 8 fields before and 10 after"):
        cpu_utilization(eight, after, [0])


def test_swapped_snapshots_are_refused():
    before = parse_proc_stat(fixture_text("proc_stat_before.txt"))
    after = parse_proc_stat(fixture_text("proc_stat_after.txt"))
    with pytest.raises(ParseError, match="CPU 0: .*idle.* went backwards between the snapshots"):
        cpu_utilization(after, before, [0])


@pytest.mark.parametrize("text, match", [
    ("cpu0 1 0 1 10\ncpu0 1 0 1 11\n", ":2: CPU 0 appears twice"),
    ("cpu0 1 0 -1 10\n", ":1: bad cpu line"),
    ("cpu0 1 0 1\n", ":1: cpu line with 3 fields"),
    ("cpu0 1 0 1 10", ":1: the last line has no newline"),
    ("", "empty"),
])
def test_proc_stat_damaged_lines(text, match):
    with pytest.raises(ParseError, match=match):
        parse_proc_stat(text, "stat")


@pytest.mark.parametrize("text", ["6512.148578\n6515.67", "nan\n6515.678012\n", "6512.148578\n"])
def test_snapshot_times_cut_or_damaged(text):
    with pytest.raises(ParseError, match="proc_stat_monotonic_s.txt"):
        parse_snapshot_times(text)


def test_a_damaged_tick_rate_is_refused():
    with pytest.raises(ParseError, match="clk_tck.txt:1: not a tick rate"):
        proc_stat_interval({"proc_stat_monotonic_s.txt": "1.0\n2.0\n", "clk_tck.txt": "1OO\n"})


def test_steal_is_neither_busy_nor_idle_and_has_its_own_share():
    """A committed run under hypervisor steal (captured): the vCPU wanted to run for 5.4 % (CPU 0)
    and 2.5 % (CPU 1) of the window and the host ran something else. Busy is wall minus idle,
    iowait and steal; steal, idle and busy make up the interval; the steal share is its own field."""
    before = parse_proc_stat(fixture_text("proc_stat_steal_before.txt"))
    after = parse_proc_stat(fixture_text("proc_stat_steal_after.txt"))
    interval = parse_snapshot_times(fixture_text("proc_stat_steal_monotonic_s.txt"))
    sender, receiver = (cpu_utilization(before, after, [c], interval, 100) for c in (0, 1))
    assert sender["steal_pct"] == pytest.approx(5.42, abs=0.01)
    assert receiver["steal_pct"] == pytest.approx(2.50, abs=0.01)
    assert sender["busy_pct"] == pytest.approx(44.71, abs=0.01)  # 50.13 when steal was counted busy
    for u in (sender, receiver):
        assert u["busy_pct"] == pytest.approx(sum(u[f"{f}_pct"] for f in BUSY_FIELDS))
        assert u["busy_pct"] + u["steal_pct"] + u["idle_pct"] + u["iowait_pct"] == pytest.approx(100)
    ticks = cpu_utilization(before, after, [0])  # without the times: the busy ticks' share, steal apart
    assert ticks["steal_pct"] > 0 and ticks["busy_pct"] == pytest.approx(sum(ticks[f"{f}_pct"] for f in BUSY_FIELDS))
