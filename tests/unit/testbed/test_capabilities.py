"""Capability detection (hostnet.testbed.capabilities), pure parts: kernel config and perf stat
parsing, an unreachable host, requirements, the table, CPU accounting."""
import pytest

from conftest import FakeHost, fixture_text
from hostnet.testbed import capabilities
from hostnet.testbed.capabilities import Capability


def test_kconfig_and_perf_stat_parsing():
    cfg = "# CONFIG_NET_SCH_NETEM is not set\nCONFIG_TCP_CONG_DCTCP=m\nCONFIG_KPROBES=y\n"
    assert capabilities.parse_kconfig(cfg, "NET_SCH_NETEM") == "n"
    assert capabilities.parse_kconfig(cfg, "TCP_CONG_DCTCP") == "m"
    assert capabilities.parse_kconfig(cfg, "KPROBES") == "y"
    assert capabilities.parse_perf_stat_supported(fixture_text("perf_stat_cycles_unsupported.txt")) is False
    assert capabilities.parse_perf_stat_supported("123456,,cycles,1000,100.00,,\n") is True


def test_unreachable_host_is_one_row():
    caps = capabilities.detect(FakeHost(name="ghost"))  # the fake host has no `true`/`date`
    assert caps["reachable"].ok is False and list(caps) == ["reachable"]


def test_require_and_table():
    caps = {"a": {"dctcp": Capability(False, "n"), "kernel": Capability(None, "6.1")},
            "b": {"dctcp": Capability(True, "y")}}
    capabilities.require(caps, {"b": ["dctcp"]})
    with pytest.raises(capabilities.MissingCapability, match="a lacks dctcp"):
        capabilities.require(caps, {"a": ["dctcp"], "b": ["dctcp"]})
    text = capabilities.table(caps)
    assert "✗ n" in text and "✓ y" in text and text.splitlines()[0].split() == ["capability", "a", "b"]


def test_cpu_accounting_from_the_kernel_config():
    """This VM's kernel: tick-based /proc/stat accounting, which reads partly loaded CPUs low."""
    here = capabilities.cpu_accounting(fixture_text("kconfig_accounting_6.18-fc.txt"))
    assert (here.ok, here.value) == (False, "tick (HZ=250)") and "no IRQ time accounting" in here.detail
    precise = capabilities.cpu_accounting("CONFIG_VIRT_CPU_ACCOUNTING_GEN=y\nCONFIG_HZ=1000\n")
    assert (precise.ok, precise.value) == (True, "precise")
    assert capabilities.cpu_accounting("").value == "unknown"


def test_big_tcp_is_refused_where_the_kernel_or_the_driver_lacks_it():
    """Read only (bigtcp show): a kernel without the IPv4 limits, and a driver whose tso_max_size
    is below the size asked, each named; servers with both pass."""
    from conftest import servers_testbed
    from hostnet.knobs import link
    ok_text = fixture_text("bigtcp_show_veth.txt")
    old = ("bigtcp dev=x tso_max_size=65536 gso_max_size=65536 gro_max_size=65536 gso_ipv4_max_size=unsupported "
           "gro_ipv4_max_size=unsupported\n")
    rx = FakeHost("rx", handlers={"/b/bigtcp": lambda argv, h: (0, old, "")})
    tb = servers_testbed(rx)
    tx = tb.endpoints["sender"].host
    tx.handlers["/b/bigtcp"] = lambda argv, h: (0, ok_text.replace("524280", "131072"), "")
    link._BUILT[rx] = link._BUILT[tx] = "/b/bigtcp"
    problems = capabilities.big_tcp_problems(tb, 185000)
    assert problems == ["tx: enp1 takes packets up to tso_max_size 131072, not 185000 (the driver's limit)",
                        "rx: enp37s0f1 has no gro_ipv4_max_size (IPv4 BIG TCP needs Linux 6.3)"]
    rx.handlers["/b/bigtcp"] = lambda argv, h: (0, ok_text, "")
    tx.handlers["/b/bigtcp"] = lambda argv, h: (0, ok_text, "")
    assert capabilities.big_tcp_problems(tb, 185000) == []


def test_ipv6_big_tcp_is_refused_where_hostnets_pair_of_limits_cannot_be_set():
    """IPv6 BIG TCP came in 5.19, but the knobs write the generic and the IPv4 limit as one pair,
    so a kernel without the IPv4 ones (5.19-6.2) is refused for IPv6 points too, saying why."""
    from conftest import servers_testbed
    from hostnet.knobs import link
    no_v4 = ("bigtcp dev=x tso_max_size=524280 gso_max_size=65536 gro_max_size=65536 gso_ipv4_max_size=unsupported "
             "gro_ipv4_max_size=unsupported\n")
    rx = FakeHost("rx", handlers={"/b/bigtcp": lambda argv, h: (0, no_v4, "")})
    tb = servers_testbed(rx)
    tx = tb.endpoints["sender"].host
    tx.handlers["/b/bigtcp"] = lambda argv, h: (0, fixture_text("bigtcp_show_veth.txt"), "")
    link._BUILT[rx] = link._BUILT[tx] = "/b/bigtcp"
    assert capabilities.big_tcp_problems(tb, 185000, ip_version=6) == [
        "rx: enp37s0f1 has no gro_ipv4_max_size (IPv6 BIG TCP came in 5.19, but hostnet sets the generic and "
        "IPv4 limits as one pair: Linux 6.3)"]
    # and the knob itself refuses such a kernel, which is why
    from hostnet.knobs import KNOBS
    with pytest.raises(link.KnobError, match="reports no gso_ipv4_max_size"):
        KNOBS["link.gso_limits"].read(rx, "enp37s0f1")


def test_an_ipv6_point_needs_an_address_of_that_version_on_every_data_interface():
    """Read from a captured `ip -j -6 addr show` (an embedded testbed's receiver just brought up):
    the address given is there; a typo in testbed.yaml, or no data_ip6 at all, is named."""
    from conftest import servers_testbed
    from hostnet.parsers.ip_addr import addresses
    text = fixture_text("ip_j_6_addr_veth.json")
    assert addresses(text) == {"2001:2::2"}  # the tentative link-local left out
    rx = FakeHost("rx", handlers={"ip": lambda argv, h: (0, text, "")})
    tb = servers_testbed(rx)
    tx = tb.endpoints["sender"].host
    tx.handlers["ip"] = lambda argv, h: (0, text.replace("2001:2::2", "2001:2::1"), "")
    tb.endpoints["sender"].ip6, tb.endpoints["receiver"].ip6 = "2001:2::1", "2001:2:0::2"
    assert capabilities.address_problems(tb, 6) == []
    assert rx.commands[-1] == ["ip", "-j", "-6", "addr", "show", "dev", "enp37s0f1"]
    tb.endpoints["receiver"].ip6 = "2001:2::9"
    tb.endpoints["sender"].ip6 = None
    missing = ["sender (tx) has no IPv6 data address (testbed.yaml: data_ip6)",
               "rx: enp37s0f1 does not have 2001:2::9 (or it is still tentative)"]
    assert capabilities.address_problems(tb, 6) == missing
    tx.files["/proc/sys/net/ipv4/tcp_available_congestion_control"] = "reno cubic"
    assert capabilities.point_requirements(tb, _config("no-opts"), 6) == missing
    assert capabilities.point_requirements(tb, _config("no-opts")) == []  # a point naming no version: data_ip
    with pytest.raises(Exception, match="not ip's JSON address list"):
        addresses("Device \"x\" does not exist.")


def _config(name):
    from hostnet.measure.config import get_config
    return get_config(name)


def test_header_data_split_off_is_named_with_the_command_that_turns_it_on():
    """Tested on a quoted bnxt_en `ethtool -g` (veth has no rings): on passes, off is refused by
    name, n/a (the driver does not say) passes; the embedded testbed is never asked."""
    from conftest import servers_testbed
    on = fixture_text("ethtool_g_bnxt_hds.txt")
    rx = FakeHost("rx", handlers={"ethtool": lambda argv, h: (0, on, "")})
    tb = servers_testbed(rx)
    assert capabilities.zerocopy_receive_problems(tb) == []
    rx.handlers["ethtool"] = lambda argv, h: (0, on.replace("split:         on", "split:         off"), "")
    assert capabilities.zerocopy_receive_problems(tb) == [
        "rx: enp37s0f1 has header-data split off (ethtool -g: TCP data split: off), so TCP_ZEROCOPY_RECEIVE "
        "maps nothing; turn it on: ethtool -G enp37s0f1 tcp-data-split on"]
    rx.handlers["ethtool"] = lambda argv, h: (0, on.replace("split:         on", "split:         n/a"), "")
    assert capabilities.zerocopy_receive_problems(tb) == []
    assert rx.commands[-1] == ["ethtool", "-g", "enp37s0f1"]


class GuestLike(FakeHost):
    """A host as the NIC rehearsal's guests answered (Debian's 6.1 kernel, the host's userland): nft
    fails to run (no nf_tables loaded), and no kernel config is readable (/boot is the host's)."""

    def __init__(self):
        def answer(argv, host):
            if argv[:2] == ["nft", "--version"]:
                return 1, "", "mnl.c:60: Unable to initialize Netlink socket: Protocol not supported\n"
            if argv[0] == "date":
                return 0, "1795900000.0\n", ""
            if argv[:2] == ["uname", "-r"]:
                return 0, "6.1.0-56-amd64\n", ""
            if argv[0] == "nproc":
                return 0, "2\n", ""
            if argv[0] == "sh" and "wc -l" in argv[2]:
                return 0, "1\n", ""
            if argv[0] in capabilities.TOOLS or argv[0] == "/usr/sbin/sshd":
                return 0, f"{argv[0]} 1.0\n", ""
            return 0, "", ""  # true, perf stat, the kernel config (none), ls /sys/class/iommu
        files = {"/proc/sys/net/ipv4/tcp_available_congestion_control": "reno cubic\n",
                 "/proc/cmdline": "console=ttyS0\n", "/proc/cpuinfo": "vendor_id : AuthenticAMD\n"}
        super().__init__("guest", files=files,
                         handlers={t: answer for t in (*capabilities.TOOLS, "true", "date", "uname", "nproc", "sh",
                                                        "test", "/usr/sbin/sshd", "ls")})


def test_a_tool_that_is_there_but_cannot_run_is_not_ticked():
    caps = capabilities.detect(GuestLike())
    assert caps["tool:nft"].ok is False and "Unable to initialize Netlink socket" in caps["tool:nft"].value
    assert "nft --version exited 1" in caps["tool:nft"].detail
    assert caps["nftables"].ok is False  # so loss injection is refused up front, not mid-campaign
    assert caps["tool:iperf3"].ok is True


def test_kernel_options_of_an_unreadable_config_are_unknown_not_off():
    caps = capabilities.detect(GuestLike())
    for name in ("dctcp", "netem", "kprobes"):
        assert caps[name].value == "unknown" and caps[name].detail == "kernel config not readable", name


def test_a_ring_sweep_is_refused_on_veth_and_above_a_drivers_maximum_before_any_setting():
    """F08's rx_ring points: veth has no rings; virtio-net (captured from the NIC rehearsal's guest,
    tests/fixtures/nic-rehearsal) reports a maximum of 256; e1000e's 4096 lets 4096 through."""
    from conftest import servers_testbed
    from hostnet.testbed import EmbeddedLayout, from_layout
    assert capabilities.ring_problems(from_layout(EmbeddedLayout("unit")), 512) == [
        "rx_ring: veth has no NIC rings (ethtool -G unsupported); the ring sweep (F08) needs a NIC"]
    virtio = fixture_text("nic-rehearsal/virtio_ethtool_g.txt")
    rx = FakeHost("rx", handlers={"ethtool": lambda argv, h: (0, virtio, "")})
    tb = servers_testbed(rx)
    assert capabilities.ring_problems(tb, 512) == ["rx: enp37s0f1 allows at most 256 rx descriptors, not 512"]
    assert capabilities.ring_problems(tb, 256) == []
    assert rx.commands[-1] == ["ethtool", "-g", "enp37s0f1"]
    e1000e = fixture_text("nic-rehearsal/e1000e_ethtool_g.txt")
    rx.handlers["ethtool"] = lambda argv, h: (0, e1000e, "")
    assert capabilities.ring_problems(tb, 4096) == []
    rx.handlers["ethtool"] = lambda argv, h: (95, "", "netlink error: Operation not supported")
    assert capabilities.ring_problems(tb, 512) == [
        "rx: enp37s0f1 does not support ethtool -g (netlink error: Operation not supported)"]


def test_a_ddio_point_on_a_receiver_without_settable_ddio_is_refused_before_anything_is_written():
    """grid.ddio own-mask/lowest-way needs each receiving machine's IIO MSR (bare-metal Intel,
    msr-tools); a VM is named with its reason and pointed at grid.ddio: host. A config without ddio
    asks nothing of the host."""
    from conftest import FakeHost, servers_testbed
    from hostnet.measure.config import get_config
    vm = FakeHost("rx", files={"/proc/cpuinfo": "vendor_id\t: GenuineIntel\nflags\t\t: fpu hypervisor\n"})
    tb = servers_testbed(vm)
    tb.endpoints["sender"].host.files["/proc/sys/net/ipv4/tcp_available_congestion_control"] = "reno cubic"
    assert capabilities.point_requirements(tb, get_config("no-opts", ddio="lowest-way")) == [
        "ddio lowest-way: rx: a virtual machine cannot reach the IIO MSR (grid.ddio: host runs at the host's own DDIO)"]
    assert capabilities.point_requirements(tb, get_config("no-opts")) == []
    assert not vm.commands
