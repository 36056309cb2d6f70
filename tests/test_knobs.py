import json

import pytest

from conftest import FakeHost, fixture_text
from hostnet.knobs import KNOBS, Journal, KnobError, Mtu, Offload, RpsCpus, Sysctl, cpu_mask, restore_journal
from hostnet.knobs.sysctl import sysctl_path


def sysctl_host(**values):
    return FakeHost(files={sysctl_path(k): f"{v}\n" for k, v in values.items()})


def ethtool_host(features_text):
    state = {"text": features_text}

    def ethtool(argv, host):
        if argv[1] == "-k":
            return 0, state["text"], ""
        flag, value = argv[3], argv[4]
        name = {"tso": "tcp-segmentation-offload", "gro": "generic-receive-offload",
                "gso": "generic-segmentation-offload"}[flag]
        state["text"] = "\n".join(
            f"{name}: {value}" if line.startswith(name + ":") else line for line in state["text"].splitlines())
        return 0, "", ""
    return FakeHost(handlers={"ethtool": ethtool})


def test_journal_records_prior_before_first_write_and_restores(tmp_path):
    host = sysctl_host(**{"net.ipv4.tcp_rmem": "4096 131072 6291456"})
    j = Journal(tmp_path / "j")
    j.set(host, KNOBS["sysctl"], "net.ipv4.tcp_rmem", "4096 131072 12582912")
    j.set(host, KNOBS["sysctl"], "net.ipv4.tcp_rmem", "4096 131072 1048576")
    entries = j.entries()
    assert len(entries) == 1 and entries[0]["prior"] == "4096 131072 6291456"
    assert host.files[sysctl_path("net.ipv4.tcp_rmem")] == "4096 131072 1048576\n"
    # restore rebuilds hosts from their description; patch the rebuild to our fake.
    import hostnet.knobs.journal as journal_mod
    orig = journal_mod.host_from_description
    journal_mod.host_from_description = lambda desc: host
    try:
        assert restore_journal(tmp_path / "j") == []
    finally:
        journal_mod.host_from_description = orig
    assert host.files[sysctl_path("net.ipv4.tcp_rmem")] == "4096 131072 6291456\n"
    assert not (tmp_path / "j").exists()


def test_journal_survives_a_new_process(tmp_path):
    host = sysctl_host(**{"net.core.rps_sock_flow_entries": "0"})
    Journal(tmp_path / "j").set(host, KNOBS["sysctl"], "net.core.rps_sock_flow_entries", "32768")
    j2 = Journal(tmp_path / "j")  # a later process, e.g. `hostnet restore`
    j2.set(host, KNOBS["sysctl"], "net.core.rps_sock_flow_entries", "4096")
    assert [e["prior"] for e in j2.entries()] == ["0"]


def test_validation_happens_before_anything_is_written(tmp_path):
    host = FakeHost(handlers={"ip": lambda a, h: (0, "", "")})
    with pytest.raises(KnobError, match="not an MTU"):
        Journal(tmp_path / "j").set(host, Mtu(), "veth0", "99999")
    assert host.commands == [] and not (tmp_path / "j").exists()


def test_read_back_mismatch_is_an_error():
    host = sysctl_host(**{"net.ipv4.tcp_rmem": "1 2 3"})

    class Sticky(Sysctl):
        def _write(self, host, key, value):  # the kernel silently ignores the write
            pass
    with pytest.raises(KnobError, match="reads back"):
        Sticky().write(host, "net.ipv4.tcp_rmem", "4 5 6")


def test_offload_uses_ethtool_and_refuses_fixed_features():
    host = ethtool_host(fixture_text("ethtool_k_veth.txt"))
    tso = Offload("tso")
    assert tso.read(host, "veth0") == "on"
    tso.write(host, "veth0", "off")
    assert ["ethtool", "-K", "veth0", "tso", "off"] in host.commands
    assert tso.read(host, "veth0") == "off"
    lro = Offload("lro")
    ok, why = lro.available(host, "veth0")
    assert not ok and "fixed" in why
    with pytest.raises(KnobError, match="fixed off"):
        lro.write(host, "veth0", "on")
    with pytest.raises(KnobError, match="unknown offload"):
        Offload("turbo")


def test_rps_mask_normalised_and_validated():
    assert cpu_mask([1]) == "2" and cpu_mask([0, 1]) == "3" and cpu_mask([4]) == "10"
    k = RpsCpus()
    host = FakeHost(files={"/sys/class/net/v0/queues/rx-0/rps_cpus": "00000000\n"})
    k.write(host, "v0/rx-0", "2")
    assert host.files["/sys/class/net/v0/queues/rx-0/rps_cpus"] == "2\n"
    with pytest.raises(KnobError, match="IFACE/rx-N"):
        k.path("../../etc/passwd")
    with pytest.raises(KnobError, match="hex"):
        k.validate("v0/rx-0", "2; reboot")


def test_sysctl_scope_and_names():
    assert Sysctl.scope_of("net.core.rps_sock_flow_entries") == "global"
    assert Sysctl.scope_of("net.ipv4.tcp_rmem") == "netns"
    with pytest.raises(KnobError):
        sysctl_path("net/../../x")
    ok, why = Sysctl().available(FakeHost(), "net.core.busy_poll")
    assert not ok and "not available" in why


def test_journal_lines_are_json_with_scope(tmp_path):
    host = sysctl_host(**{"net.core.rps_sock_flow_entries": "0"})
    Journal(tmp_path / "j").set(host, KNOBS["sysctl"], "net.core.rps_sock_flow_entries", "1")
    line = json.loads((tmp_path / "j").read_text().splitlines()[0])
    assert line["host"] == {"name": "fake", "kind": "FakeHost"} and line["knob"] == "sysctl"
