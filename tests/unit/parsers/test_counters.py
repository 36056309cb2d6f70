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
    assert deltas({"a": 1, "b": 5}, {"a": 4, "b": 5}) == {"a": 3, "b": 0}


def test_deltas_refuse_a_counter_on_one_side_only():
    """A counter missing before would come out as its total since boot; missing after, as nothing."""
    with pytest.raises(ParseError, match="different counters: c"):
        deltas({"a": 1, "b": 5}, {"a": 4, "b": 5, "c": 2}, "snmp.txt")
    with pytest.raises(ParseError, match="different counters: a"):
        deltas({"a": 1}, {}, "snmp.txt")


def test_deltas_of_swapped_snapshots_raise_but_gauges_may_go_down():
    before, after = (parse_snmp(fixture_text("proc_net_snmp.txt").replace("Udp: 0 0 0 0", f"Udp: {n} 0 0 0"))
                     for n in (10, 25))
    assert deltas(before, after)["Udp.InDatagrams"] == 15
    with pytest.raises(ParseError, match="Udp.InDatagrams went down"):
        deltas(after, before, "snmp")
    assert deltas({"Tcp.CurrEstab": 3}, {"Tcp.CurrEstab": 1}) == {"Tcp.CurrEstab": -2}  # a gauge, not a counter


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


def test_a_softnet_row_with_too_few_columns_raises_parse_error_not_value_error():
    with pytest.raises(ParseError, match=r"softnet:1: 2 columns where at least 3 were expected"):
        parse_softnet_stat("0000abcd 00000000\n", "softnet")
    rows = fixture_text("softnet_stat.txt").splitlines(keepends=True)
    cut = rows[0] + " ".join(rows[1].split()[:10]) + "\n"  # the second CPU's row cut at a column
    with pytest.raises(ParseError, match=r"softnet:2: 10 columns where 15 were expected"):
        parse_softnet_stat(cut, "softnet")
    with pytest.raises(ParseError, match=r"softnet:1: not a row of 8-digit hex columns"):
        parse_softnet_stat(rows[0][:50] + "\n", "softnet")  # cut inside a column


@pytest.mark.parametrize("text", ["", "\n\n", "Tcp: A B\nTcp: 1 2"])
def test_snmp_empty_or_cut_raises_instead_of_an_empty_table(text):
    """{} from an empty file made every delta against it zero (or, the before file empty, totals since boot)."""
    with pytest.raises(ParseError, match="snmp"):
        parse_snmp(text, "snmp")


def test_snmp_damaged_value_and_repeated_row():
    with pytest.raises(ParseError, match=r"snmp:2: bad value '1x' for Tcp.B"):
        parse_snmp("Tcp: A B\nTcp: 1 1x\n", "snmp")
    with pytest.raises(ParseError, match=r"snmp:4: Tcp.A appears twice"):
        parse_snmp("Tcp: A\nTcp: 1\nTcp: A\nTcp: 2\n", "snmp")


def test_interrupts_row_cut_short_raises_instead_of_being_dropped():
    """A row cut to one count once passed for a machine-wide one (ERR, MIS) and was left out."""
    from hostnet.parsers.counters import parse_interrupts
    text = fixture_text("proc_interrupts_before.txt")
    lines = text.splitlines()
    n, res = next((n, ln) for n, ln in enumerate(lines, 1) if ln.strip().startswith("RES:"))
    with pytest.raises(ParseError, match=rf"interrupts:{n}: RES has 1 counts for 2 CPUs"):
        parse_interrupts(text.replace(res, " ".join(res.split()[:2])), "interrupts")
    three_cpus = text.replace(lines[0], lines[0] + "       CPU2")
    with pytest.raises(ParseError, match=r"interrupts:\d+: .* has 2 counts for 3 CPUs"):
        parse_interrupts(three_cpus, "interrupts")


@pytest.mark.parametrize("text, match", [
    ('[{"stats64": {"rx": {"dropped": "x"}, "tx": {}}}]', "stats64.rx.dropped is not a count"),
    ('[{"stats64": {"rx": {"dropped": -1}, "tx": {}}}]', "stats64.rx.dropped is not a count"),
    ('[{"stats64": []}]', "lacks its rx and tx"),
    ('[{"stats64": {"rx": {}}}]', "lacks its rx and tx"),
])
def test_link_stats_of_the_wrong_shape_or_type(text, match):
    with pytest.raises(ParseError, match=match):
        parse_ip_link_stats(text)


def test_ethtool_stats_garbage_raises_and_none_is_empty():
    assert parse_ethtool_stats("") == {}  # the counters probe stores "" when ethtool -S fails
    with pytest.raises(ParseError, match=r"ethtool -S:1: not ethtool -S output"):
        parse_ethtool_stats("hello\n")
    with pytest.raises(ParseError, match=r"ethtool -S:4: not a 'name: count' line"):
        parse_ethtool_stats(fixture_text("ethtool_S_veth.txt").replace("xdp_bytes: 0", "xdp_bytes"))
    with pytest.raises(ParseError, match="no newline: cut short"):
        parse_ethtool_stats(fixture_text("ethtool_S_veth.txt").rstrip("\n"))


def test_perf_stat_empty_or_cut_raises():
    text = fixture_text("perf_stat_software.txt")
    with pytest.raises(ParseError, match="no per-CPU counts"):
        parse_perf_stat("")
    with pytest.raises(ParseError, match=r"perf stat:4: a per-CPU line cut short"):
        parse_perf_stat(text[:text.index("4143") + 2])
    with pytest.raises(ParseError, match="counted on different CPUs"):
        parse_perf_stat(text.rsplit("CPU1,4143", 1)[0])


def test_softnet_and_interrupt_deltas_refuse_counters_that_went_down_but_take_a_u32_wrap():
    from hostnet.parsers.counters import interrupt_deltas, parse_interrupts, softnet_deltas
    before = parse_softnet_stat("ffffff00 00000000 00000001\n00000001 00000000 00000000\n")
    after = parse_softnet_stat("00000010 00000000 00000001\n00000005 00000000 00000000\n")
    assert softnet_deltas(before, after) == {0: {"processed": 0x110, "dropped": 0, "time_squeeze": 0},
                                             1: {"processed": 4, "dropped": 0, "time_squeeze": 0}}
    with pytest.raises(ParseError, match=r"x: cpu1.processed went down between the snapshots \(swapped\?\)"):
        softnet_deltas(after, before | {0: after[0]}, "x")
    with pytest.raises(ParseError, match=r"the snapshots name different counters: cpu1"):
        softnet_deltas(before, {0: after[0]}, "x")
    b, a = (parse_interrupts(fixture_text(f"proc_interrupts_{w}.txt")) for w in ("before", "after"))
    got = interrupt_deltas(b, a, ("LOC", "RES"))
    assert got["LOC"] == {c: a["LOC"][c] - b["LOC"][c] for c in a["LOC"]} and set(got) == {"LOC", "RES"}
    with pytest.raises(ParseError, match=r"irq: LOC.cpu\d.* went down"):
        interrupt_deltas(a, b, ("LOC",), "irq")


def test_irq_names_are_the_names_the_driver_gave_its_vectors():
    from hostnet.parsers.counters import parse_irq_names
    names = parse_irq_names(fixture_text("nic-rehearsal/e1000e_proc_interrupts.txt"))
    msi = [int(x) for x in fixture_text("nic-rehearsal/e1000e_msi_irqs.txt").split()]
    assert [names[i] for i in msi] == ["data0-rx-0", "data0-tx-0", "data0"]  # e1000e: rx, tx, then link
    assert names[0] == "timer" and all(isinstance(k, int) for k in names)  # LOC, RES, ... have no number


def test_a_legacy_intx_nic_is_named_on_its_io_apic_line():
    """The NIC rehearsal's e1000: no msi_irqs; its line is device/irq's, named after the interface."""
    from hostnet.parsers.counters import parse_irq_names
    names = parse_irq_names(fixture_text("nic-rehearsal/e1000_proc_interrupts.txt"))
    assert names[int(fixture_text("nic-rehearsal/e1000_device_irq.txt"))] == "data0"
    assert "No such file" in fixture_text("nic-rehearsal/e1000_msi_irqs.txt")


def test_irq_names_refuse_what_is_not_proc_interrupts():
    from hostnet.parsers.counters import parse_irq_names
    with pytest.raises(ParseError, match="name the CPUs"):
        parse_irq_names("rx-usecs: 3\n")
