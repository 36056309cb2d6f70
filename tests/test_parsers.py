import pytest

from conftest import fixture_text
from hostnet.knobs.ethtool import parse_features
from hostnet.parsers import ParseError
from hostnet.parsers.iperf3 import parse_iperf3
from hostnet.parsers.perf_report import parse_perf_report
from hostnet.parsers.procpids import parse_pid_stat, parse_snapshot
from hostnet.parsers.procstat import (BUSY_FIELDS, cpu_utilization, parse_proc_stat, parse_snapshot_times,
                                      proc_stat_interval)


def test_iperf3_success_captured_all_opts():
    r = parse_iperf3(fixture_text("iperf3_all-opts.json"))
    assert 1 < r.received_bps / 1e9 < 200
    assert r.sent_bps == pytest.approx(r.received_bps, rel=0.05)
    assert r.congestion_control == "cubic"
    assert r.seconds == pytest.approx(3, abs=0.2)
    assert r.retransmits is not None and r.retransmits >= 0


def test_iperf3_no_opts_has_retransmits_field():
    r = parse_iperf3(fixture_text("iperf3_no-opts.json"))
    assert r.retransmits > 0  # veth's two-backlog reordering without RPS on the sender side


def test_iperf3_error_json_raises_with_tool_message():
    # iperf3 3.12 exits 0 here: the error is only in the JSON.
    with pytest.raises(ParseError, match="Connection refused"):
        parse_iperf3(fixture_text("iperf3_refused.json"))


@pytest.mark.parametrize("text,msg", [("", "empty"), ("{not json", "not JSON"), ('{"end": {}}', "missing")])
def test_iperf3_bad_input(text, msg):
    with pytest.raises(ParseError, match=msg):
        parse_iperf3(text, "x.json")


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


def test_perf_report_captured():
    rows = parse_perf_report(fixture_text("perf_report_all-opts.txt"))
    assert {r.cpu for r in rows} == {0, 1}
    syms = {(r.cpu, r.symbol) for r in rows}
    assert (0, "_copy_from_iter") in syms  # sender copies from user
    assert any(s == "_copy_to_iter" for _, s in syms)  # receiver copies to user
    assert all(r.samples > 0 for r in rows)
    assert any(not r.kernel for r in rows) and any(r.kernel for r in rows)
    assert any(r.comm == "iperf3" for r in rows)


def test_perf_report_empty_and_garbage():
    assert parse_perf_report(fixture_text("perf_report_empty.txt")) == []
    with pytest.raises(ParseError, match="r.txt:2"):
        parse_perf_report("# Overhead\n 1.0%\t3\t000\n", "r.txt")
    with pytest.raises(ParseError, match="header"):
        parse_perf_report("hello world\n")


def test_pid_stat_with_spaces_in_comm():
    pid, comm, ppid, ticks = parse_pid_stat("42 (a (b) c) S 7 1 1 0 -1 0 0 0 0 0 11 13 0 0 20 0 1 0")
    assert (pid, comm, ppid, ticks) == (42, "a (b) c", 7, 24)
    snap = parse_snapshot(fixture_text("pids_before.txt"))
    assert 1 in snap and len(snap) > 20
    with pytest.raises(ParseError):
        parse_pid_stat("garbage")


def test_ethtool_features_captured_from_veth():
    feats = parse_features(fixture_text("ethtool_k_veth.txt"))
    assert feats["tcp-segmentation-offload"] == (True, False)
    assert feats["generic-receive-offload"] == (False, False)
    assert feats["large-receive-offload"] == (False, True)  # fixed off on veth
