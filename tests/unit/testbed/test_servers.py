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
    (lambda d: d.pop("roles"), r": roles is missing"),
    (lambda d: d["hosts"]["sender1"].pop("data_ip"), r"hosts\.sender1\.data_ip is missing"),
    (lambda d: d["hosts"]["sender1"].update(data_ip="not-an-ip"), r"hosts\.sender1\.data_ip: 'not-an-ip' is not an IP"),
    (lambda d: d["hosts"]["sender1"].update(data_iface="eth0; reboot"), r"data_iface: .* is not an interface name"),
    (lambda d: d["hosts"]["sender1"]["cpus"].update(app_cpus=[]), r"app_cpus: \[\] is not a non-empty list"),
    (lambda d: d["hosts"]["sender1"]["cpus"].update(app_cpus=[0, -1]), r"app_cpus\.1: -1 is not a CPU number"),
    (lambda d: d["hosts"]["sender1"].update(colour="blue"), r"hosts\.sender1\.colour is not a known key"),
    (lambda d: d["roles"].update(receivers=["nobody"]), r"roles\.receivers names 'nobody'"),
    (lambda d: d.update(name="Bad Name"), r"name: 'Bad Name' is not a testbed name"),
    # issue 19: each of these failed open or with a traceback
    (lambda d: d["ssh"].update(insecure_accept_unknown_keys="false"),
     r"ssh\.insecure_accept_unknown_keys: 'false' is not true or false"),
    (lambda d: d["hosts"].update({"../x": d["hosts"].pop("sender1")}), r"hosts: '\.\./x' is not a host name"),
    (lambda d: d.update(ssh=[]), r"ssh: \[\] is not a mapping of SSH settings"),
    (lambda d: d["hosts"]["sender1"].update(port="ssh"), r"hosts\.sender1\.port: 'ssh' is not a port number"),
    (lambda d: d["hosts"]["sender1"].update(port=0), r"hosts\.sender1\.port: 0 is not a port number"),
    (lambda d: d["hosts"]["sender1"].update(tools={"iperf3": 3}), r"tools\.iperf3: 3 is not a path"),
    (lambda d: d["hosts"]["sender1"].update(tools=["iperf3"]), r"tools: \['iperf3'\] is not a mapping"),
    (lambda d: d["hosts"].update(sender1=None), r"hosts\.sender1: None is not a mapping of host settings"),
    (lambda d: d["roles"].update(senders="sender1"), r"roles\.senders: 'sender1' is not a non-empty list"),
    (lambda d: d["ssh"].update(connect_timeout_s=0), r"ssh\.connect_timeout_s: 0 is not a number of seconds"),
    (lambda d: d.update(extra=1), r"extra is not a known key \(known: hosts, name, roles, ssh\)"),
])
def test_validation_names_file_and_key(tmp_path, mutate, msg):
    doc = valid()
    mutate(doc)
    path = write(tmp_path, doc)
    with pytest.raises(servers.TestbedFileError, match=msg) as exc:
        servers.load(path)
    assert str(path) in str(exc.value)


def test_every_problem_is_named_and_a_list_is_no_testbed(tmp_path):
    doc = valid()
    doc["hosts"]["sender1"].update(port="ssh", user="root; reboot")
    with pytest.raises(servers.TestbedFileError) as exc:
        servers.load(write(tmp_path, doc))
    assert "hosts.sender1.port" in str(exc.value) and "hosts.sender1.user" in str(exc.value)
    with pytest.raises(servers.TestbedFileError, match=r"\(top level\): \['a'\] is not a mapping"):
        servers.load(write(tmp_path, ["a"]))


def test_host_key_opt_out_only_from_a_yaml_boolean(tmp_path):
    doc = valid()
    doc["ssh"]["insecure_accept_unknown_keys"] = True
    assert servers.from_yaml(write(tmp_path, doc)).sender.host.insecure is True
    doc["ssh"] = None  # an empty ssh: section means the defaults
    assert servers.from_yaml(write(tmp_path, doc)).sender.host.insecure is False


def test_unreadable_and_invalid_yaml(tmp_path):
    with pytest.raises(servers.TestbedFileError, match="cannot read"):
        servers.load(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("hosts: [unclosed")
    with pytest.raises(servers.TestbedFileError, match="not valid YAML"):
        servers.load(bad)
