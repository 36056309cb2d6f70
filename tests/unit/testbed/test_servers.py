"""testbed.yaml for real servers (hostnet.testbed.servers): the example, validation naming the file
and key, unreadable and invalid YAML. No connection is made."""
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from hostnet.testbed import servers

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
    with pytest.raises(servers.TestbedFileError, match="not valid YAML") as exc:
        servers.load(bad)
    assert f'in "{bad}", line 1' in str(exc.value)  # the file itself, not "<unicode string>"
