"""hostnet.measure.config: the ladder of stack configs, their validation and labels, and the settings a
point applies (every knob, every point)."""
import dataclasses

import pytest

from hostnet.knobs import KNOBS
from hostnet.knobs.setting import SWITCH_PLACE, Place, Setting
from hostnet.measure import config as sc
from hostnet.testbed import EmbeddedLayout, from_layout
from hostnet.analysis import flags


def test_ladder_configs():
    assert list(sc.LADDER) == ["no-opts", "tsogro", "jumbo", "tsogro+jumbo", "all-opts"]
    allopts = sc.get_config("all-opts")
    assert (allopts.tso, allopts.gro, allopts.mtu, allopts.arfs) == (True, True, 9000, True)
    assert sc.get_config("no-opts").congestion_control == "cubic"


def test_bad_configs_rejected():
    with pytest.raises(sc.ConfigError, match="unknown config"):
        sc.get_config("turbo")
    with pytest.raises(sc.ConfigError, match="tcp_rmem"):
        sc.get_config("tsogro", tcp_rmem="4096 1 2")
    with pytest.raises(sc.ConfigError, match="congestion"):
        sc.get_config("tsogro", congestion_control="westwood")


def test_labels_say_what_each_step_does_on_the_testbed():
    assert "RFS" in sc.get_config("all-opts").label("embedded", "rps")
    assert sc.get_config("all-opts").label("servers") == "all-opts"
    assert sc.get_config("tsogro+arfs").label("embedded", "rps") == "tsogro+rfs"
    # threaded NAPI: GSO stands in for TSO, and NAPI already runs on the app's core
    assert sc.get_config("tsogro").label("embedded", "napi-thread") == "gsogro"
    assert sc.get_config("all-opts").label("embedded", "napi-thread") == "all-opts (NAPI on the app core)"
    assert sc.get_config("jumbo").label("embedded", "napi-thread") == "jumbo"


def test_settings_apply_every_knob_for_every_point(state_dir):
    tb = from_layout(EmbeddedLayout("unit", steering="rps"))
    a = {(s.place.label, s.knob.name, s.key): s.value for s in sc.settings(tb, sc.get_config("all-opts"))}
    n = {(s.place.label, s.knob.name, s.key): s.value for s in sc.settings(tb, sc.get_config("no-opts"))}
    assert set(a) == set(n)  # applied whole: the same knobs, different values
    assert a[("sender", "offload.tso", "hnunits")] == "on" and n[("sender", "offload.tso", "hnunits")] == "off"
    assert a[("receiver", "mtu", "hnunitr")] == "9000"
    assert a[("receiver", "rps_cpus", "hnunitr/rx-0")] == "2" and a[("sender", "rps_cpus", "hnunits/rx-0")] == "1"
    assert a[("machine:local", "sysctl", "net.core.rps_sock_flow_entries")] == "32768"
    assert n[("machine:local", "sysctl", "net.core.rps_sock_flow_entries")] is None  # back to prior


def test_every_endpoint_defaults_to_the_point_s_congestion_control_before_any_socket_connects(state_dir):
    """iperf3 sets TCP_CONGESTION after connect(): the socket connected under the namespace's default
    (bbr here), whose init marks it for pacing, and "cubic" flows stayed paced. The default is the
    point's, set with the rest of its config before the flows start."""
    tb = from_layout(EmbeddedLayout("unit", steering="napi-thread"))
    for cc in ("cubic", "bbr"):
        cfg = sc.get_config("all-opts", congestion_control=cc)
        got = {(s.place.label, s.key): s.value for s in sc.settings(tb, cfg) if s.knob.name == "congestion_control"}
        assert got == {(side, "net.ipv4.tcp_congestion_control"): cc for side in ("sender", "receiver")}
        order = [s.knob.name for s in sc.settings(tb, cfg)]
        allowed = [s.value for s in sc.settings(tb, cfg) if s.knob.name == "congestion_allowed"]
        assert allowed == [f"+{cc}"]  # on the machine, before the namespaces' defaults need it
        assert order.index("congestion_allowed") < order.index("congestion_control")
    # servers: the host's default is its own network configuration (and a rehearsal's namespace
    # cannot write the machine's list): the per-socket choice only
    from conftest import FakeHost, servers_testbed
    names = {s.knob.name for s in sc.settings(servers_testbed(FakeHost("rx")), sc.get_config("all-opts"))}
    assert not names & {"congestion_allowed", "congestion_control"}


def _settings(tb, name):
    return {(s.place.label, s.knob.name, s.key): s.value for s in sc.settings(tb, sc.get_config(name))}


@pytest.mark.parametrize("steering", ["napi-thread", "rps", "none"])
def test_every_receive_path_applies_the_same_knobs_at_every_step(state_dir, steering):
    tb = from_layout(EmbeddedLayout("unit", steering=steering))
    keys = [set(_settings(tb, c)) for c in sc.CONFIGS]
    assert all(k == keys[0] for k in keys)


def test_napi_thread_realises_tso_as_gso_and_gro_off_as_merging_nothing(state_dir):
    tb = from_layout(EmbeddedLayout("unit", steering="napi-thread"))
    a, n = _settings(tb, "all-opts"), _settings(tb, "no-opts")
    # a TSO-sized skb would bypass the receiver's NAPI: the sender segments in software instead
    assert a[("sender", "offload.tso", "hnunits")] == "off" and a[("sender", "offload.gso", "hnunits")] == "on"
    assert n[("sender", "offload.gso", "hnunits")] == "off"
    # GRO gives NAPI at every step; without GRO it merges nothing (gro_max_size 0), and no XDP
    # program is attached (veth would copy every packet for it)
    assert a[("receiver", "offload.gro", "hnunitr")] == n[("receiver", "offload.gro", "hnunitr")] == "on"
    assert n[("receiver", "gro_max_size", "hnunitr")] == "0"
    assert a[("receiver", "gro_max_size", "hnunitr")] is None  # the host's own (65536), from the journal
    assert not any(k[1] == "xdp" for k in list(a) + list(n))
    order = [(s.place.label, s.knob.name, s.key) for s in sc.settings(tb, sc.get_config("no-opts"))]
    for side, iface, cpus in (("sender", "hnunits", "0"), ("receiver", "hnunitr", "1")):
        assert a[(side, "napi_threaded", iface)] == "1" and a[(side, "napi_affinity", iface)] == cpus
        assert a[(side, "rps_cpus", f"{iface}/rx-0")] == "0"  # no per-packet IPIs
        assert a[(side, "qdisc", iface)] == "pfifo limit 1000"
        assert order.index((side, "napi_threaded", iface)) < order.index((side, "napi_affinity", iface))
    # the ACK path: the receiver's veth sends without TSO, the sender's runs NAPI (GRO)
    assert a[("receiver", "offload.tso", "hnunitr")] == "off" and a[("sender", "offload.gro", "hnunits")] == "on"


def test_kernel_default_path_sets_no_rps_and_no_napi(state_dir):
    tb = from_layout(EmbeddedLayout("unit", steering="none"))
    a = _settings(tb, "all-opts")
    assert a[("sender", "offload.tso", "hnunits")] == "on"
    assert a[("receiver", "rps_cpus", "hnunitr/rx-0")] == "0" and a[("sender", "rps_cpus", "hnunits/rx-0")] == "0"
    assert not any(k[1] in ("napi_threaded", "napi_affinity", "xdp", "qdisc", "gro_max_size") for k in a)


def test_bridged_napi_thread_turns_tso_off_on_the_switch_ports(state_dir):
    tb = from_layout(EmbeddedLayout("unit", n_senders=2, steering="napi-thread"))
    a = _settings(tb, "tsogro")
    for port in tb.switch_ports:
        assert a[("switch", "offload.tso", port)] == "off" and a[("switch", "qdisc", port)] == "pfifo limit 1000"
    assert {k[2] for k in a if k[1] == "napi_threaded"} == {e.iface for e in tb.endpoints.values()}


def test_real_servers_keep_their_nic_steering():
    from hostnet.testbed import steering
    assert steering.sends_tso("nic", True) and steering.receive_gro("nic", False) == (False, None)


def test_a_setting_left_as_it_was_that_the_host_lacks_is_recorded_absent(state_dir, tmp_path):
    """A server rehearsed in a network namespace has no net.core.rps_sock_flow_entries (init_net
    only): a point that leaves it as it was journals nothing for it; one that sets it still fails."""
    from conftest import FakeHost
    from hostnet.knobs import KNOBS, Journal, KnobError
    from hostnet.knobs.sysctl import sysctl_path
    from hostnet.testbed import Endpoint, Testbed
    rmem = "net.ipv4.tcp_rmem"
    host = FakeHost("rx", files={sysctl_path(rmem): "4096 131072 6291456\n"},
                    handlers={"cat": lambda argv, h: (1, "", f"cat: {argv[1]}: No such file or directory")})
    tb = Testbed("lab", "servers", {"receiver": Endpoint("receiver", host, "eth1", "198.18.0.2", [0], "rx")},
                 {"rx": host}, Journal(tmp_path / "lab.journal"))
    plan = [Setting(Place.of_machine("rx"), KNOBS["sysctl"], "net.core.rps_sock_flow_entries", None),
            Setting(Place.of_role("receiver"), KNOBS["sysctl"], rmem, "4096 131072 1048576")]
    applied = sc.apply_settings(tb, plan)
    assert applied == {"machine:rx/sysctl/net.core.rps_sock_flow_entries": "absent",
                       f"receiver/sysctl/{rmem}": "4096 131072 1048576"}
    assert [e["key"] for e in tb.journal.entries()] == [rmem]
    with pytest.raises(KnobError, match="rps_sock_flow_entries is not available"):
        sc.apply_settings(tb, [Setting(Place.of_machine("rx"), KNOBS["sysctl"], "net.core.rps_sock_flow_entries",
                                       "32768")])


def test_an_unreachable_host_is_not_taken_for_a_missing_setting(state_dir, tmp_path):
    from hostnet.hosts import HostUnreachable
    from hostnet.knobs import KNOBS, Journal, KnobError
    from hostnet.testbed import Testbed

    class Gone:
        name = "rx"

        def read_text(self, path):
            raise HostUnreachable("rx: unreachable (no answer within 10 s)")

        def describe(self):
            return {"kind": "gone", "name": "rx"}
    tb = Testbed("lab", "servers", {}, {"rx": Gone()}, Journal(tmp_path / "lab.journal"))
    with pytest.raises(KnobError, match="unreachable") as exc:  # as before: never skipped as absent
        sc.apply_settings(tb, [Setting(Place.of_machine("rx"), KNOBS["sysctl"], "net.core.rps_sock_flow_entries",
                                       None)])
    assert isinstance(exc.value.__cause__, HostUnreachable) and tb.journal.entries() == []


def _irq_servers(irq_cpus, handlers=None):
    from conftest import FakeHost
    from hostnet.testbed import Endpoint, Testbed
    rx = FakeHost("rx", handlers=handlers or {})
    eps = {"sender": Endpoint("sender", FakeHost("tx"), "enp1", "198.18.0.1", [0], "tx"),
           "receiver": Endpoint("receiver", rx, "enp37s0f1", "198.18.0.2", [12, 13], "rx", irq_cpus=irq_cpus)}
    return Testbed("lab", "servers", eps, {"tx": eps["sender"].host, "rx": rx}, None)


def test_a_servers_nic_interrupts_go_to_irq_cpus_without_arfs_and_to_the_app_cores_with_it():
    """The paper's placements from the testbed.yaml: no aRFS, IRQs on cpus.irq_cpus (the NIC-remote
    node); aRFS, queue i's IRQ on application core i mod n; irqbalance stopped where it runs."""
    tb = _irq_servers([24, 25])
    plan = sc.IrqPlan({"receiver": [101, 102, 103]}, frozenset({"rx"}))
    def placed(name):
        return {(s.place.label, s.knob.name, s.key): s.value for s in sc.settings(tb, sc.get_config(name), plan)
                if s.knob.name in ("irq_affinity", "irqbalance")}
    assert placed("tsogro") == {("machine:rx", "irqbalance", "service"): "stopped",
                                **{("receiver", "irq_affinity", str(i)): "24,25" for i in (101, 102, 103)}}
    assert placed("all-opts") == {("machine:rx", "irqbalance", "service"): "stopped",
                                  ("receiver", "irq_affinity", "101"): "12", ("receiver", "irq_affinity", "102"): "13",
                                  ("receiver", "irq_affinity", "103"): "12"}
    no_irq_cpus = _irq_servers([])
    assert not [s.knob for s in sc.settings(no_irq_cpus, sc.get_config("tsogro"), plan)
                if s.knob.name == "irq_affinity"]  # the host's own placement stays


def test_irq_plan_reads_the_nics_interrupts_and_refuses_an_irqbalance_it_cannot_stop():
    ls = {"sh": lambda argv, h: (0, "101\n102\n", "")}  # queue_irqs lists msi_irqs in a fixed sh script
    tool = {"irqbalance": lambda argv, h: (0, "", "")}  # FakeHost.which finds the tools it has handlers for
    assert sc.irq_plan(_irq_servers([24], ls)) == sc.IrqPlan({"receiver": [101, 102]})  # no irqbalance to stop
    with pytest.raises(sc.KnobError, match="irq_cpus is set but rx: no systemctl to stop/start irqbalance"):
        sc.irq_plan(_irq_servers([24], {**ls, **tool}))
    with_systemd = _irq_servers([24], {**ls, **tool, "systemctl": lambda argv, h: (0, "active\n", "")})
    assert sc.irq_plan(with_systemd) == sc.IrqPlan({"receiver": [101, 102]}, frozenset({"rx"}))
    assert sc.irq_plan(_irq_servers([])) == sc.IrqPlan({})



def test_a_host_wide_setting_that_moved_during_the_window_is_named(state_dir, tmp_path):
    """The runner reads a point's host-wide settings once its window closed: one that no longer
    reads as applied (an operator, another tool) flags the run; per-namespace ones are not read."""
    from conftest import FakeHost
    from hostnet.knobs import KNOBS, Journal
    from hostnet.knobs.sysctl import sysctl_path
    from hostnet.sections.common import flag_detail, flag_report
    from hostnet.testbed import Endpoint, Testbed
    flow, rmem = "net.core.rps_sock_flow_entries", "net.ipv4.tcp_rmem"
    host = FakeHost("rx", files={sysctl_path(flow): "0\n", sysctl_path(rmem): "4096 131072 6291456\n"})
    tb = Testbed("lab", "servers", {"receiver": Endpoint("receiver", host, "eth1", "198.18.0.2", [0], "rx")},
                 {"rx": host}, Journal(tmp_path / "lab.journal"))
    applied = sc.apply_settings(tb, [Setting(Place.of_machine("rx"), KNOBS["sysctl"], flow, "32768"),
                                     Setting(Place.of_role("receiver"), KNOBS["sysctl"], rmem, "4096 131072 1048576")])
    assert sc.moved_globals(tb, applied) == ""
    host.files[sysctl_path(flow)] = "0\n"
    host.files[sysctl_path(rmem)] = "4096 131072 6291456\n"  # not host-wide: the journal's own to keep
    moved = sc.moved_globals(tb, applied)
    assert moved == f"machine:rx/sysctl/{flow} read '0' after the window, '32768' applied"
    manifest = {"status": "ok", "run_id": "r1", "settings_moved": moved}
    assert flags.flagged(manifest) == "setting moved" and not flags.usable(manifest)
    assert flag_detail(manifest) == f"setting moved: {moved}"
    assert flag_report([manifest]).endswith("1 for a host-wide setting that moved during the window")


@pytest.mark.parametrize("steering", ["napi-thread", "rps"])
def test_big_tcp_raises_both_ends_limit_pairs_after_gro_max_size(state_dir, steering):
    tb = from_layout(EmbeddedLayout("unit", steering=steering))
    big = sc.get_config("all-opts", big_tcp_bytes=185000)
    got = {(s.place.label, s.knob.name, s.key): s.value for s in sc.settings(tb, big)}
    assert got[("sender", "link.gso_limits", "hnunits")] == "185000/185000"
    assert got[("receiver", "link.gro_limits", "hnunitr")] == "185000/185000"
    # the pair goes after gro_max_size, which (at 64 KB and below) moves the IPv4 GRO limit with it
    order = [(s.place.label, s.knob.name) for s in sc.settings(tb, big)]
    if steering == "napi-thread":
        assert order.index(("receiver", "gro_max_size")) < order.index(("receiver", "link.gro_limits"))
    # without it the hosts' limits are left alone (hosts without BIG TCP run every other experiment)
    assert not any(k[1].startswith("link.") for k in _settings(tb, "all-opts"))


def test_big_tcp_needs_tso_and_gro_and_a_size_a_driver_takes():
    with pytest.raises(sc.ConfigError, match="needs TSO and GRO on .config jumbo"):
        sc.get_config("jumbo", big_tcp_bytes=185000)
    with pytest.raises(sc.ConfigError, match="a packet size from 65536 to 524280"):
        sc.get_config("all-opts", big_tcp_bytes=600000)


def test_a_place_keeps_its_manifest_label_both_ways():
    """Manifests record applied settings as LABEL/knob/key: a role, "machine:NAME" or "switch"."""
    for place, label in ((Place.of_role("receiver1"), "receiver1"), (Place.of_machine("rx"), "machine:rx"),
                         (SWITCH_PLACE, "switch")):
        assert place.label == label and Place.parse(label) == place
    assert Setting(Place.of_machine("rx"), KNOBS["sysctl"], "net.core.rmem_max", "1").label == \
        "machine:rx/sysctl/net.core.rmem_max"


def test_a_ring_point_sets_each_receivers_rx_ring_and_other_points_leave_rings_alone():
    from conftest import FakeHost, servers_testbed
    tb = servers_testbed(FakeHost("rx"))
    ring = [(s.place.label, s.key, s.value) for s in sc.settings(tb, sc.get_config("tsogro", rx_ring=4096))
            if s.knob.name == "ring.rx"]
    assert ring == [("receiver", "enp37s0f1", "4096")]
    assert not [s for s in sc.settings(tb, sc.get_config("tsogro")) if s.knob.name.startswith("ring.")]
    # a config without a ring describes itself as every run recorded before rings existed
    assert "rx_ring" not in sc.get_config("tsogro").describe()
    assert sc.get_config("tsogro", rx_ring=256).describe()["rx_ring"] == 256


def test_a_ddio_point_writes_the_receivers_mask_through_the_journal_and_the_next_puts_the_own_back(tmp_path):
    """grid.ddio (sweeps/dca-iommu.yaml) through the point's config: lowest-way then own-mask on the
    receiver's machine, resolved against the journal's prior, and restored after; other configs
    leave DDIO alone (hosts without it run every other experiment)."""
    from conftest import FakeHost, servers_testbed
    from hostnet.knobs.journal import Journal
    msr = {"mask": "600"}

    def wrmsr(argv, host):
        msr["mask"] = argv[-1].removeprefix("0x")
        return 0, "", ""
    rx = FakeHost("rx", files={"/proc/cpuinfo": "vendor_id\t: GenuineIntel\nflags\t\t: fpu sse\n"},
                  handlers={"rdmsr": lambda a, h: (0, msr["mask"] + "\n", ""), "wrmsr": wrmsr})
    tb = dataclasses.replace(servers_testbed(rx), journal=Journal(tmp_path / "journal"))
    [ddio] = [s for s in sc.settings(tb, sc.get_config("tsogro", ddio="lowest-way")) if s.knob.name == "ddio_ways"]
    assert (ddio.place.label, ddio.key, ddio.value) == ("machine:rx", "llc_ways", "lowest-way")
    assert not [s for s in sc.settings(tb, sc.get_config("tsogro")) if s.knob.name == "ddio_ways"]
    ddio_only = [ddio]
    assert sc.apply_settings(tb, ddio_only) == {"machine:rx/ddio_ways/llc_ways": "0x200"} and msr["mask"] == "200"
    own = ddio._replace(value="own-mask")
    assert sc.apply_settings(tb, [own]) == {"machine:rx/ddio_ways/llc_ways": "0x600"} and msr["mask"] == "600"
    sc.apply_settings(tb, ddio_only)
    assert tb.journal.restore() == [] and msr["mask"] == "600"
    assert sc.get_config("tsogro", ddio="lowest-way").describe()["ddio"] == "lowest-way"
    assert "ddio" not in sc.get_config("tsogro").describe()
    with pytest.raises(sc.ConfigError, match="ddio 'off': one of own-mask, lowest-way"):
        sc.get_config("tsogro", ddio="off")
