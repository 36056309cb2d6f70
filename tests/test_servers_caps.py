"""testbed.yaml validation and capability detection (pure parts; no connection is made)."""
from pathlib import Path

import pytest
import yaml

from conftest import REPO, FakeHost, fixture_text
from hostnet import capabilities, servers
from hostnet.capabilities import Capability

EXAMPLE = REPO / "testbeds" / "example-two-servers.yaml"


def write(tmp_path: Path, doc: dict) -> Path:
    p = tmp_path / "testbed.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def valid() -> dict:
    doc = yaml.safe_load(EXAMPLE.read_text())
    for i, h in enumerate(doc["hosts"].values()):
        h["address"] = f"lab-host-{i}"  # a name: never resolved by these tests
    return doc


def test_example_mirrors_the_paper_and_refuses_its_placeholders():
    doc = yaml.safe_load(EXAMPLE.read_text())
    assert doc["roles"] == {"senders": ["sender1"], "receivers": ["receiver1"]}
    assert doc["hosts"]["sender1"]["cpus"]["numa_nodes"] == 4
    with pytest.raises(servers.TestbedFileError, match="hosts.sender1.address 192.0.2.11 is a documentation"):
        servers.load(EXAMPLE)


def test_from_yaml_builds_ssh_endpoints(tmp_path):
    tb = servers.from_yaml(write(tmp_path, valid()))
    assert tb.kind == "servers" and list(tb.machines) == ["sender1", "receiver1"]
    assert tb.sender.host.describe()["kind"] == "SshHost" and tb.sender.iface == "ens1f0np0"
    assert tb.sender.host.tool_paths["iperf3"] == "/usr/bin/iperf3"
    assert tb.receiver.cpus == [0, 1, 2, 3, 4, 5] and not tb.sender.host.insecure


@pytest.mark.parametrize("mutate,msg", [
    (lambda d: d.pop("roles"), r"\.roles is missing"),
    (lambda d: d["hosts"]["sender1"].pop("data_ip"), r"hosts\.sender1\.data_ip is missing"),
    (lambda d: d["hosts"]["sender1"].update(data_ip="not-an-ip"), r"hosts\.sender1\.data_ip is not an IP"),
    (lambda d: d["hosts"]["sender1"].update(data_iface="eth0; reboot"), r"data_iface .* is not an interface"),
    (lambda d: d["hosts"]["sender1"]["cpus"].update(app_cpus=[]), r"app_cpus must be a non-empty list"),
    (lambda d: d["hosts"]["sender1"].update(colour="blue"), r"hosts\.sender1\.colour is not a known key"),
    (lambda d: d["roles"].update(receivers=["nobody"]), r"roles\.receivers names 'nobody'"),
    (lambda d: d.update(name="Bad Name"), r"name must be"),
])
def test_validation_names_file_and_key(tmp_path, mutate, msg):
    doc = valid()
    mutate(doc)
    path = write(tmp_path, doc)
    with pytest.raises(servers.TestbedFileError, match=msg) as exc:
        servers.load(path)
    assert str(path) in str(exc.value)


def test_unreadable_and_invalid_yaml(tmp_path):
    with pytest.raises(servers.TestbedFileError, match="cannot read"):
        servers.load(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("hosts: [unclosed")
    with pytest.raises(servers.TestbedFileError, match="not valid YAML"):
        servers.load(bad)


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


def test_run_summary_cautions_about_partly_loaded_cpus_under_tick_accounting():
    from hostnet.cli import cpu_accounting_note
    tick = {"versions": {"local": {"kernel": "6.18", "cpu_accounting": "tick (HZ=250)"}}}
    note = cpu_accounting_note(tick, {"sender": 99.0, "receiver": 2.3})
    assert note.startswith("receiver CPU below 90 % with tick (HZ=250) CPU accounting")
    assert cpu_accounting_note(tick, {"sender": 99.0, "receiver": 95.0}) == ""
    precise = {"versions": {"local": {"kernel": "6.18", "cpu_accounting": "precise"}}}
    assert cpu_accounting_note(precise, {"sender": 10.0, "receiver": 2.3}) == ""
    assert cpu_accounting_note({"versions": {"local": {"kernel": "6.18"}}}, {"sender": 1.0}) == ""  # older runs
    # runs that kept their snapshot times measure busy as wall minus idle: no tick bias to warn of
    assert cpu_accounting_note({**tick, "cpu_util_method": {"local": "wall-minus-idle"}}, {"receiver": 2.3}) == ""
