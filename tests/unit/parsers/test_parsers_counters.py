import pytest

from conftest import fixture_text
from hostnet.parsers import ParseError
from hostnet.parsers.counters import (deltas, parse_ethtool_stats, parse_ip_link_stats, parse_perf_stat,
                                      parse_snmp, parse_softnet_stat)


def test_snmp_and_netstat():
    snmp = parse_snmp(fixture_text("proc_net_snmp.txt"))
    assert "Tcp.RetransSegs" in snmp and "Udp.RcvbufErrors" in snmp and "Ip.InReceives" in snmp
    netstat = parse_snmp(fixture_text("proc_net_netstat.txt"), "netstat")
    assert "TcpExt.TCPBacklogDrop" in netstat and "IpExt.InOctets" in netstat
    with pytest.raises(ParseError):
        parse_snmp("Tcp: A B\nUdp: 1 2\n")


def test_softnet_per_cpu():
    s = parse_softnet_stat(fixture_text("softnet_stat.txt"))
    assert set(s) == {0, 1} and set(s[0]) == {"processed", "dropped", "time_squeeze"}
    assert s[0]["processed"] > 0
    with pytest.raises(ParseError):
        parse_softnet_stat("zzzz 0000\n")


def test_link_and_ethtool_stats():
    link = parse_ip_link_stats(fixture_text("ip_s_j_link_veth.json"))
    assert {"rx.dropped", "tx.dropped", "rx.packets"} <= set(link)
    eth = parse_ethtool_stats(fixture_text("ethtool_S_veth.txt"))
    assert "peer_ifindex" in eth
    assert parse_ethtool_stats("no stats available\n") == {}
    with pytest.raises(ParseError):
        parse_ip_link_stats("[]")


def test_perf_stat_unsupported_is_none_never_zero():
    unsupported = parse_perf_stat(fixture_text("perf_stat_cache_unsupported.txt"))
    assert set(unsupported) == {"cache-references", "cache-misses", "LLC-loads", "LLC-load-misses"}
    assert all(v is None for per_cpu in unsupported.values() for v in per_cpu.values())
    supported = parse_perf_stat(fixture_text("perf_stat_software.txt"))
    assert supported["context-switches"][1] == 4143 and supported["task-clock"][0] == pytest.approx(203.60)


def test_deltas():
    assert deltas({"a": 1, "b": 5}, {"a": 4, "b": 5, "c": 2}) == {"a": 3, "b": 0, "c": 2}


def test_interrupts_per_cpu_from_captured_proc_interrupts():
    from hostnet.parsers.counters import parse_interrupts
    before = parse_interrupts(fixture_text("proc_interrupts_before.txt"))
    after = parse_interrupts(fixture_text("proc_interrupts_after.txt"))
    for name in ("LOC", "RES", "CAL", "TLB"):
        assert set(before[name]) == {0, 1} and all(after[name][c] >= before[name][c] for c in (0, 1))
    assert "ERR" not in before and "MIS" not in before  # one count for the machine: left out
    assert after["LOC"][0] > before["LOC"][0]


def test_interrupts_refuses_what_is_not_proc_interrupts():
    from hostnet.parsers import ParseError
    from hostnet.parsers.counters import parse_interrupts
    with pytest.raises(ParseError, match="name the CPUs"):
        parse_interrupts("")
    with pytest.raises(ParseError, match="no LOC"):
        parse_interrupts("   CPU0\n 24:  1  IO-APIC\n")
