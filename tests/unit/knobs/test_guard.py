"""The management-interface guard (hostnet.knobs.guard): a change that touches the management path
(default route, SSH session, their VLAN parents, bond and bridge ports, per-interface sysctls, the
management NIC's IRQs) is refused with KnobError before any command changes anything, and so is
every change the guard cannot judge because a query failed.

Routes, links and the NIC IRQ listing are this VM's real output (fixtures/README.md); the VLAN,
bond and bridge devices are added to that output with the fields iproute2 prints for them."""
import copy
import json

import pytest

from conftest import FakeHost, fixture_text
from hostnet.knobs import KNOBS, Journal, KnobError, Mtu, Sysctl
from hostnet.knobs.guard import management_interfaces, management_path, nic_irqs

LINKS = json.loads(fixture_text("ip_d_j_link_root.json"))
ROUTE4 = fixture_text("ip_j_4_route_default.json")
ROUTE6 = fixture_text("ip_j_6_route_default.json")
EXTRA = {  # what iproute2 prints for each kind, trimmed to the fields the guard reads
    "vlan": [{"ifname": "eth0.100", "link": "eth0", "linkinfo": {"info_kind": "vlan",
                                                               "info_data": {"protocol": "802.1Q", "id": 100}}}],
    "bond": [{"ifname": "bond0", "linkinfo": {"info_kind": "bond"}},
             {"ifname": "eth1", "master": "bond0", "linkinfo": {"info_slave_kind": "bond"}}],
    "bridge": [{"ifname": "br0", "linkinfo": {"info_kind": "bridge"}},
               {"ifname": "eth1", "master": "br0", "linkinfo": {"info_slave_kind": "bridge"}}],
}
DATA = {"ifname": "eth2"}  # the data NIC: on no management path


def lab_host(route_dev="eth0", extra=(), ip_fails=None, irqs=None, **files):
    """A host with this VM's links (+ extra), a default route on route_dev, eth0's real IRQ list
    (irqs overrides it per device; None as a value: the query fails)."""
    links = copy.deepcopy(LINKS) + [dict(x) for x in extra] + [DATA]
    state = {"mtu": {ln["ifname"]: ln.get("mtu", 1500) for ln in links}}
    irq_out = {"eth0": fixture_text("nic_irqs_virtio_eth0.txt"), "eth1": "64\n65\n", "eth2": "80\n81\n",
               "lo": "virtual\n", **(irqs or {})}

    def ip(argv, h):
        if ip_fails and ip_fails in " ".join(argv):
            return 1, "", "Error: ip failed"
        if argv[1:] == ["-j", "-4", "route", "show", "default"]:
            return 0, ROUTE4.replace('"eth0"', json.dumps(route_dev)), ""
        if argv[1:] == ["-j", "-6", "route", "show", "default"]:
            return 0, ROUTE6.replace('"eth0"', json.dumps(route_dev)), ""
        if argv[1:] == ["-j", "-d", "link", "show"]:
            return 0, json.dumps(links), ""
        if argv[1:4] == ["-j", "link", "show"]:
            return 0, json.dumps([{"ifname": argv[-1], "mtu": state["mtu"][argv[-1]]}]), ""
        if argv[1:3] == ["link", "set"]:
            state["mtu"][argv[4]] = int(argv[6])
            return 0, "", ""
        raise AssertionError(argv)

    def sh(argv, h):
        out = irq_out.get(argv[-1], "absent\n")
        return (1, "", "ls: Permission denied") if out is None else (0, out, "")
    host = FakeHost(files=files, handlers={"ip": ip, "sh": sh})
    host.mtu = state["mtu"]
    return host


def only_reads(host):
    """Every command the host ran was one of the guard's queries (or a knob's read)."""
    return all(c[:2] == ["sh", "-c"] or (c[0] == "ip" and ("show" in c)) for c in host.commands)


def refused(host, tmp_path, knob, key, value, match="refusing"):
    j = Journal(tmp_path / "j")
    with pytest.raises(KnobError, match=match):
        j.set(host, knob, key, value)
    assert not (tmp_path / "j").exists() and only_reads(host)


def test_management_interface_is_refused_before_any_write(tmp_path):
    host = lab_host(**{"/sys/class/net/eth0/queues/rx-0/rps_cpus": "0\n"})
    refused(host, tmp_path, Mtu(), "eth0", "9000", match="refusing to change eth0")
    refused(host, tmp_path, KNOBS["rps_cpus"], "eth0/rx-0", "2", match="refusing to change eth0")
    assert host.files["/sys/class/net/eth0/queues/rx-0/rps_cpus"] == "0\n" and host.mtu["eth0"] == 1400


def test_data_interface_is_changed(tmp_path):
    host = lab_host()
    Journal(tmp_path / "j").set(host, Mtu(), "eth2", "9000")
    assert host.mtu["eth2"] == 9000 and ["ip", "link", "set", "dev", "eth2", "mtu", "9000"] in host.commands


@pytest.mark.parametrize("fails", ["-4 route", "-6 route", "-d link"])
def test_a_failing_ip_query_refuses(tmp_path, fails):
    host = lab_host(ip_fails=fails)
    refused(host, tmp_path, Mtu(), "eth2", "9000", match="cannot tell its management interfaces")
    assert host.mtu["eth2"] == 1500


def test_ip_missing_or_printing_nonsense_refuses(tmp_path):
    refused(FakeHost(), tmp_path, Mtu(), "eth2", "9000", match="ip is not installed")
    garbled = FakeHost(handlers={"ip": lambda argv, h: (0, "Usage: ip [ OPTIONS ]", "")})
    refused(garbled, tmp_path, Mtu(), "eth2", "9000", match="cannot tell")
    not_a_list = FakeHost(handlers={"ip": lambda argv, h: (0, '{"dev": "eth0"}', "")})
    refused(not_a_list, tmp_path, Mtu(), "eth2", "9000", match="cannot tell")


def test_no_ipv6_in_the_kernel_is_no_ipv6_route(tmp_path):
    def ip(argv, h):
        if "-6" in argv:
            return 2, "", "RTNETLINK answers: Address family not supported by protocol"
        return 0, (ROUTE4 if "route" in argv else json.dumps(LINKS)), ""
    assert management_interfaces(FakeHost(handlers={"ip": ip})) == {"eth0"}


@pytest.mark.parametrize("kind,route_dev,victim", [
    ("vlan", "eth0.100", "eth0"),     # MTU of the VLAN's parent
    ("bond", "bond0", "eth1"),        # a port of the management bond
    ("bridge", "br0", "eth1"),        # a port of the management bridge
])
def test_devices_under_the_management_path_are_refused(tmp_path, kind, route_dev, victim):
    host = lab_host(route_dev=route_dev, extra=EXTRA[kind])
    refused(host, tmp_path, Mtu(), victim, "9000", match=f"refusing to change {victim}")
    refused(host, tmp_path, KNOBS["offload.gro"], victim, "off", match=f"refusing to change {victim}")
    assert host.mtu[victim] == 1400 if victim == "eth0" else host.mtu[victim] == 1500


def test_management_path_follows_lower_devices_ports_and_masters():
    links = [{"ifname": "eth0", "master": "bond0"}, {"ifname": "eth1", "master": "bond0"},
             {"ifname": "bond0"}, {"ifname": "bond0.100", "link": "bond0"}, {"ifname": "br0"},
             {"ifname": "eth2"}, {"ifname": "veth0", "link_index": 3, "link_netnsid": 0}]
    assert management_path({"bond0.100"}, links) == {"bond0.100", "bond0", "eth0", "eth1"}
    assert management_path({"eth0"}, links) == {"eth0", "bond0", "eth1"}  # its bond, and so its siblings
    assert management_path({"veth0"}, links) == {"veth0"}  # a peer in another namespace is not ours
    assert management_path(set(), links) == set()


@pytest.mark.parametrize("key", ["net.ipv6.conf.eth0.disable_ipv6", "net.ipv4.conf.eth0.rp_filter",
                                 "net.ipv4.neigh.eth0.base_reachable_time_ms",
                                 "net.ipv6.conf.eth0.100.disable_ipv6"])
def test_per_interface_sysctls_of_the_management_path_are_refused(tmp_path, key):
    host = lab_host(route_dev="eth0.100", extra=EXTRA["vlan"],
                    **{"/proc/sys/" + key.replace(".", "/"): "0\n"})
    refused(host, tmp_path, Sysctl(), key, "1")
    assert host.files["/proc/sys/" + key.replace(".", "/")] == "0\n"


def test_all_interfaces_sysctl_is_refused_where_there_is_a_management_path(tmp_path):
    key = "net.ipv6.conf.all.disable_ipv6"
    refused(lab_host(**{"/proc/sys/net/ipv6/conf/all/disable_ipv6": "0\n"}), tmp_path, Sysctl(), key, "1",
            match="every interface")
    # a namespace with no default route and no SSH session (the embedded testbed's) may
    lonely = FakeHost(files={"/proc/sys/net/ipv6/conf/all/disable_ipv6": "0\n"},
                      handlers={"ip": lambda argv, h: (0, "[]", "")})
    Journal(tmp_path / "k").set(lonely, Sysctl(), key, "1")
    assert lonely.files["/proc/sys/net/ipv6/conf/all/disable_ipv6"] == "1\n"


def test_other_sysctls_need_no_lookup(tmp_path):
    files = {"/proc/sys/net/ipv4/tcp_rmem": "4096 131072 6291456\n",
             "/proc/sys/net/ipv4/conf/default/rp_filter": "2\n", "/proc/sys/net/ipv4/conf/eth2/rp_filter": "2\n"}
    host = lab_host(**files)
    j = Journal(tmp_path / "j")
    j.set(host, Sysctl(), "net.ipv4.tcp_rmem", "4096 131072 1048576")
    j.set(host, Sysctl(), "net.ipv4.conf.default.rp_filter", "0")  # only interfaces made later
    assert host.commands == []
    j.set(host, Sysctl(), "net.ipv4.conf.eth2.rp_filter", "0")
    assert host.files["/proc/sys/net/ipv4/conf/eth2/rp_filter"] == "0\n"


def test_irq_affinity_of_the_management_nic_is_refused(tmp_path):
    irq_files = {f"/proc/irq/{n}/smp_affinity_list": "0-1\n" for n in (38, 64, 80)}
    host = lab_host(**irq_files)
    assert nic_irqs(host, "eth0") == {37, 38, 39}  # virtio2's MSI-X vectors on this VM (/proc/interrupts)
    refused(host, tmp_path, KNOBS["irq_affinity"], "38", "1", match="IRQ 38")
    bonded = lab_host(route_dev="bond0", extra=EXTRA["bond"], **irq_files)
    refused(bonded, tmp_path, KNOBS["irq_affinity"], "64", "1", match="IRQ 64")  # eth1, a bond port
    Journal(tmp_path / "j").set(host, KNOBS["irq_affinity"], "80", "1")  # the data NIC's
    assert host.files["/proc/irq/80/smp_affinity_list"] == "1\n"


@pytest.mark.parametrize("answer", [None, "", "0\n"])
def test_irq_affinity_refused_when_the_management_nic_irqs_are_unknown(tmp_path, answer):
    host = lab_host(irqs={"eth0": answer}, **{"/proc/irq/80/smp_affinity_list": "0-1\n"})
    refused(host, tmp_path, KNOBS["irq_affinity"], "80", "1", match="cannot tell which IRQs")
    assert host.files["/proc/irq/80/smp_affinity_list"] == "0-1\n"


def test_ssh_session_interface_counts_and_an_unknown_one_refuses(tmp_path):
    class SessionHost(FakeHost):
        session = ["eth2"]

        def connection_interfaces(self):
            if self.session is None:
                from hostnet.hosts import HostError
                raise HostError("SSH_CONNECTION is empty")
            return self.session
    host = SessionHost(handlers=lab_host().handlers)
    refused(host, tmp_path, Mtu(), "eth2", "9000", match="refusing to change eth2")
    host.session = None
    refused(host, tmp_path, Mtu(), "eth2", "9000", match="SSH session")
