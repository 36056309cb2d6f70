"""The knob journal (hostnet.knobs.journal): the prior value is on disk before the first write,
survives the process, is restored; values are validated before anything is written."""
import json

import pytest

from conftest import FakeHost
from hostnet.knobs import KNOBS, Journal, KnobError, Mtu, restore_journal
from hostnet.knobs.sysctl import sysctl_path


def sysctl_host(**values):
    return FakeHost(files={sysctl_path(k): f"{v}\n" for k, v in values.items()})


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


def test_journal_lines_are_json_with_scope(tmp_path):
    host = sysctl_host(**{"net.core.rps_sock_flow_entries": "0"})
    Journal(tmp_path / "j").set(host, KNOBS["sysctl"], "net.core.rps_sock_flow_entries", "1")
    line = json.loads((tmp_path / "j").read_text().splitlines()[0])
    assert line["host"] == {"name": "fake", "kind": "FakeHost"} and line["knob"] == "sysctl"
