"""Every knob's command building, parsing and validation, against a fake host.

Features this machine cannot exercise (NIC rings, ntuple rules, IRQs, irqbalance, DDIO, IOMMU)
are tested here through the commands they build and the errors they give.
"""
import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from conftest import FakeHost, fixture_text
from hostnet.hosts import HostError
from hostnet.knobs import (KNOBS, Channels, CongestionControl, DdioWays, Iommu, IrqAffinity, Irqbalance, Journal,
                           KnobError, Mtu, NftLoss, NtupleRule, RingSize, XpsCpus)
from hostnet.knobs.loss import parse_loss_table, ruleset
from hostnet.knobs.platform import iommu_state
from hostnet.knobs.steering_extra import parse_cpu_list

# `ethtool -g` of a NIC, in ethtool 6.1's layout (this VM has no NIC with rings to capture from).
NIC_RINGS = """Ring parameters for eth1:
Pre-set maximums:
RX:\t\t8192
RX Mini:\tn/a
RX Jumbo:\tn/a
TX:\t\t8192
Current hardware settings:
RX:\t\t1024
RX Mini:\tn/a
RX Jumbo:\tn/a
TX:\t\t1024
"""


def ethtool_returning(show_output, rc=0, err=""):
    return FakeHost(handlers={"ethtool": lambda argv, h: (rc, show_output, err) if argv[1] in ("-g", "-l", "-n")
                              else (0, "", "")})


def test_rings_bounded_by_device_maximum():
    host = ethtool_returning(NIC_RINGS)
    rx = RingSize("rx")
    assert rx.read(host, "eth1") == "1024"
    with pytest.raises(KnobError, match="at most 8192"):
        rx._write(host, "eth1", "16384")
    assert not any(c[1] == "-G" for c in host.commands)
    rx._write(host, "eth1", "4096")
    assert ["ethtool", "-G", "eth1", "rx", "4096"] in host.commands


def test_rings_unsupported_on_veth_says_why():
    host = ethtool_returning(fixture_text("ethtool_g_veth.txt"), rc=1)
    ok, why = RingSize("rx").available(host, "veth0")
    assert not ok and "does not support ethtool -g" in why and "Operation not supported" in why


def test_channels_parsed_from_veth():
    host = ethtool_returning(fixture_text("ethtool_l_veth.txt"))
    assert Channels("rx").read(host, "veth0") == "1"
    with pytest.raises(KnobError, match="at most 2"):
        Channels("rx")._write(host, "veth0", "3")
    Channels("tx")._write(host, "veth0", "2")
    assert ["ethtool", "-L", "veth0", "tx", "2"] in host.commands
    with pytest.raises(KnobError, match="no channels combined"):
        Channels("combined").read(host, "veth0")


def test_ntuple_rules_are_created_and_deleted_on_restore(tmp_path):
    state = {"present": False}

    def ethtool(argv, host):
        if argv[1] == "-n":
            return (0, "Filter: 7\n", "") if state["present"] else (1, "", "Cannot get RX classification rule")
        state["present"] = argv[3] != "delete"
        return 0, "", ""
    host = FakeHost(handlers={"ethtool": ethtool})
    j = Journal(tmp_path / "j")
    j.set(host, NtupleRule(), "eth1/7", "flow-type tcp4 dst-ip 198.18.0.2 dst-port 5201 action 3")
    assert host.commands[-2][:3] == ["ethtool", "-N", "eth1"] and host.commands[-2][-2:] == ["loc", "7"]
    assert j.entries()[0]["prior"] == "absent"
    NtupleRule().write(host, "eth1/7", j.entries()[0]["prior"])  # what restore does
    assert ["ethtool", "-N", "eth1", "delete", "7"] in host.commands and not state["present"]
    veth = ethtool_returning("", rc=1, err=fixture_text("ethtool_n_veth.txt"))
    assert NtupleRule().read(veth, "veth0/1") == "absent"
    for bad in ("flow-type tcp4 dst-ip 1.2.3.999", "dst-port 5201", "flow-type tcp4 action 1; reboot"):
        with pytest.raises(KnobError):
            NtupleRule().validate("eth1/7", bad)


def test_irq_affinity_and_cpu_lists():
    assert parse_cpu_list("0-2,5") == [0, 1, 2, 5]
    host = FakeHost(files={"/proc/irq/45/smp_affinity_list": "0-3\n"})
    k = IrqAffinity()
    k.write(host, "45", "1")
    assert host.files["/proc/irq/45/smp_affinity_list"] == "1\n"
    with pytest.raises(KnobError):
        k.validate("45", "1;2")
    with pytest.raises(KnobError, match="IRQ number"):
        k.read(host, "../../etc/passwd")


def test_irqbalance_unavailable_without_daemon():
    ok, why = Irqbalance().available(FakeHost())
    assert not ok and "not installed" in why
    host = FakeHost(handlers={"irqbalance": None, "systemctl": lambda a, h: (0, "active\n", "")})
    host.handlers.pop("irqbalance")
    host.handlers["irqbalance"] = lambda a, h: (0, "", "")
    assert Irqbalance().read(host) == "running"
    Irqbalance()._write(host, "service", "stopped")
    assert ["systemctl", "stop", "irqbalance"] in host.commands


def test_xps_key_shape():
    assert XpsCpus().path("eth1/tx-3") == "/sys/class/net/eth1/queues/tx-3/xps_cpus"
    with pytest.raises(KnobError):
        XpsCpus().path("eth1/rx-3")


def test_loss_ruleset_and_counters_from_a_real_table():
    text = ruleset("veth1", 0.01)
    assert 'iifname "veth1"' in text and "mod 1000000 < 10000" in text and text.count("table inet hostnet_loss") == 3
    parsed = parse_loss_table(fixture_text("nft_loss_table.json"))
    assert parsed["rate"] == pytest.approx(0.01)
    assert parsed["seen_packets"] == 94592 and parsed["dropped_packets"] == 966
    assert 0.009 < parsed["dropped_packets"] / parsed["seen_packets"] < 0.011
    with pytest.raises(KnobError):
        ruleset('x" drop; flush ruleset; "', 0.1)
    for bad in ("1.5", "-0.1", "lots"):
        with pytest.raises(KnobError):
            NftLoss().validate("veth1", bad)


def test_loss_zero_deletes_only_our_table():
    listed = {"present": True}

    def nft(argv, host):
        if argv[1] == "list":
            return (0, "", "") if listed["present"] else (1, "", "No such file")
        if argv[1] == "delete":
            listed["present"] = False
        return 0, "", ""
    host = FakeHost(handlers={"nft": nft})
    NftLoss()._write(host, "veth1", "0")
    assert ["nft", "delete", "table", "inet", "hostnet_loss"] in host.commands
    NftLoss()._write(host, "veth1", "0")
    assert host.commands.count(["nft", "delete", "table", "inet", "hostnet_loss"]) == 1


def test_ddio_unavailable_on_amd_and_in_vms_and_built_on_intel():
    amd = FakeHost(files={"/proc/cpuinfo": "vendor_id\t: AuthenticAMD\nflags\t\t: fpu hypervisor\n"})
    ok, why = DdioWays().available(amd)
    assert not ok and "AuthenticAMD" in why
    vm = FakeHost(files={"/proc/cpuinfo": "vendor_id\t: GenuineIntel\nflags\t\t: fpu hypervisor\n"})
    assert "virtual machine" in DdioWays().available(vm)[1]
    metal = FakeHost(files={"/proc/cpuinfo": "vendor_id\t: GenuineIntel\nflags\t\t: fpu sse\n"},
                     handlers={"rdmsr": lambda a, h: (0, "600\n", ""), "wrmsr": lambda a, h: (0, "", "")})
    assert DdioWays().read(metal) == "0x600"
    DdioWays()._write(metal, "llc_ways", "0x7ff")
    assert ["wrmsr", "-a", "0xc8b", "0x7ff"] in metal.commands
    with pytest.raises(KnobError):
        DdioWays().validate("llc_ways", "7ff; reboot")


def test_iommu_is_read_only():
    assert iommu_state("root=/dev/vda intel_iommu=on", ["dmar0"]) == "on"
    assert iommu_state("intel_iommu=off", ["dmar0"]) == "off"
    assert iommu_state("iommu=pt", ["dmar0"]) == "passthrough"
    assert iommu_state("console=ttyS0", []) == "off"
    host = FakeHost(files={"/proc/cmdline": "console=ttyS0\n"}, handlers={"ls": lambda a, h: (2, "", "")})
    ok, why = Iommu().available(host)
    assert not ok and "reboot" in why and "now: off" in why
    with pytest.raises(KnobError, match="read-only"):
        Iommu().write(host, "state", "on")


def test_congestion_control_unsupported_names_available_ones():
    host = FakeHost(files={"/proc/sys/net/ipv4/tcp_available_congestion_control": "reno bbr cubic\n",
                           "/proc/sys/net/ipv4/tcp_congestion_control": "bbr\n"})
    with pytest.raises(KnobError, match="dctcp is unsupported.*reno bbr cubic"):
        CongestionControl().write(host, "net.ipv4.tcp_congestion_control", "dctcp")
    CongestionControl().write(host, "net.ipv4.tcp_congestion_control", "cubic")
    assert host.files["/proc/sys/net/ipv4/tcp_congestion_control"] == "cubic\n"


def test_sysctl_value_shapes():
    sysctl = KNOBS["sysctl"]
    sysctl.validate("net.ipv4.tcp_rmem", "4096 131072 6291456")
    for key, bad in (("net.ipv4.tcp_rmem", "6291456 4096 1"), ("net.core.netdev_budget", "300\n1"),
                     ("net.core.rmem_max", "-1"), ("net.ipv4.tcp_ecn", "1\n")):
        with pytest.raises(KnobError):
            sysctl.validate(key, bad)


def _route_host(dev="eth0", **files):
    host = FakeHost(files=files, handlers={
        "ip": lambda argv, h: (0, json.dumps([{"dst": "default", "dev": dev}]) if "-4" in argv else "[]", "")})
    return host


def test_management_interface_is_refused_before_any_write(tmp_path):
    host = _route_host(**{"/sys/class/net/eth0/queues/rx-0/rps_cpus": "0\n"})
    j = Journal(tmp_path / "j")
    with pytest.raises(KnobError, match="refusing to change eth0"):
        j.set(host, Mtu(), "eth0", "9000")
    with pytest.raises(KnobError, match="refusing to change eth0"):
        j.set(host, KNOBS["rps_cpus"], "eth0/rx-0", "2")
    assert not (tmp_path / "j").exists()
    assert all(c[0] == "ip" and "route" in c for c in host.commands)
    assert host.files["/sys/class/net/eth0/queues/rx-0/rps_cpus"] == "0\n"


# Keys and values are interface names, queue keys, sysctl names and values: whatever text a user
# types must be rejected or reach the tool as one literal argv element, never a shell.
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
@settings(max_examples=400, deadline=None)
@given(knob=st.sampled_from(sorted(KNOBS)), key=text, value=text)
def test_arbitrary_input_is_rejected_or_one_literal_argument(knob, key, value):
    host = FakeHost(handlers={t: (lambda argv, h: (0, "", "")) for t in (
        "ethtool", "ip", "nft", "systemctl", "wrmsr", "rdmsr", "ls", "modprobe", "sh", "bash")})
    try:
        KNOBS[knob].validate(key, value)
        KNOBS[knob]._write(host, key, value)
    except (KnobError, HostError):
        return  # rejected (or the fake host has no such file): nothing interpreted
    for argv in host.commands:
        assert argv[0] not in ("sh", "bash"), argv
    acting = [argv for argv in host.commands if argv[1:2] != ["-j"] and argv[1:2] != ["list"]]
    if acting and knob != "loss":  # loss passes its validated interface inside an nft script on stdin
        assert any(key in argv or key.split("/", 1)[0] in argv for argv in acting), (key, acting)
    if knob == "loss":
        assert re.fullmatch(r"[\w.-]{1,15}", key)
