"""The embedded testbed written as a testbed.yaml + ssh_config (hostnet.testbed.as_servers), from a
state file as `hostnet testbed up` leaves it: read back by servers.from_yaml, each endpoint reached
through the bastion (ProxyJump) or through its own alias (ProxyCommand). No namespace is built;
the same files driven for real: tests/live/test_live_servers.py."""
import json
from dataclasses import asdict

import pytest
import yaml

from hostnet import cli
from hostnet.testbed import EmbeddedLayout, TestbedError, as_servers, servers


def up_state(state_dir, **layout):
    state_dir.mkdir(parents=True, exist_ok=True)
    lay = EmbeddedLayout("lab1", **layout)
    (state_dir / "lab1.json").write_text(json.dumps({"layout": asdict(lay), "persistent": True}))
    (state_dir / "lab1-ssh").mkdir()
    (state_dir / "lab1-ssh" / "client_ed25519").write_text("a key (the ssh_config's IdentityFile must exist)\n")
    return lay


def test_behind_a_bastion_the_servers_are_management_addresses_with_a_proxy_jump(state_dir, tmp_path):
    up_state(state_dir, ssh=True, bastion=True, n_receivers=2)
    path, conf = as_servers.write("lab1", tmp_path / "lab.yaml")
    assert conf == tmp_path / "lab.ssh_config"
    tb = servers.from_yaml(path)
    assert tb.name == "lab1-servers" and tb.kind == "servers"  # its own journal, not the embedded one's
    assert [(r, e.host.address, e.ip, e.iface, e.cpus) for r, e in tb.endpoints.items()] == [
        ("sender", "198.19.0.1", "198.18.0.1", "hnlab1s", [0]),
        ("receiver", "198.19.0.2", "198.18.0.2", "hnlab1r", [1]),
        ("receiver1", "198.19.0.4", "198.18.0.4", "hnlab1r1", [1])]
    bastion = tb.sender.host.proxy_jump
    assert all(e.host.proxy_jump is bastion for e in tb.endpoints.values())
    assert (bastion.name, bastion.address, bastion.user) == ("hostnet-lab1-bastion", "198.19.0.254", "root")
    assert bastion.proxy_command == "ip netns exec hostnet-lab1-bst nc 198.19.0.254 22"
    keys = state_dir / "lab1-ssh"
    for host in (tb.sender.host, bastion):
        assert host.key_filename == str(keys / "client_ed25519") and host.known_hosts == str(keys / "known_hosts")
        assert not host.insecure
    assert tb.sender.host.guard_connection_interface  # SSH arrives on mgmt0, which the guard keeps


def test_without_a_bastion_each_server_is_an_ssh_config_alias(state_dir, tmp_path):
    up_state(state_dir, ssh=True)
    path, conf = as_servers.write("lab1", tmp_path / "lab.yaml")
    doc = yaml.safe_load(path.read_text())
    assert doc["hosts"]["sender"]["address"] == "hostnet-lab1-sender" and "proxy_jump" not in doc["hosts"]["sender"]
    assert "Host hostnet-lab1-receiver\n    HostName 198.18.0.2\n" in conf.read_text()
    r = servers.from_yaml(path).receiver.host
    assert (r.address, r.user, r.proxy_jump) == ("198.18.0.2", "root", None)
    assert r.proxy_command == "ip netns exec hostnet-lab1-rcv nc 198.18.0.2 22"


def test_a_testbed_without_sshds_cannot_be_servers(state_dir, tmp_path):
    up_state(state_dir)
    with pytest.raises(TestbedError, match="no sshds"):
        as_servers.write("lab1", tmp_path / "lab.yaml")
    with pytest.raises(TestbedError, match="needs the sshds"):
        EmbeddedLayout("lab2", bastion=True)


def test_the_bastions_namespace_and_management_addresses(state_dir):
    lay = up_state(state_dir, ssh=True, bastion=True, n_senders=2)
    assert lay.netns["bastion"] == "hostnet-lab1-bst"
    assert lay.mgmt_ips == {"sender": "198.19.0.1", "sender1": "198.19.0.3", "receiver": "198.19.0.2"}
    assert EmbeddedLayout("lab3", ssh=True).mgmt_ips == {}


def test_testbed_up_refuses_yaml_and_bastion_without_ssh(capsys):
    for extra in (["--write-yaml", "x.yaml"], ["--bastion"]):
        with pytest.raises(SystemExit):
            cli.main(["testbed", "up", "--name", "lab4", *extra])
        assert "add --ssh" in capsys.readouterr().err


def test_testbed_up_refuses_a_yaml_no_run_could_use(capsys):
    """#33: without --bastion the written testbed.yaml's SSH sessions ride the data interfaces, and
    the command it suggested was refused by the management-path guard; now up refuses first."""
    with pytest.raises(SystemExit) as exc:
        cli.main(["testbed", "up", "--name", "lab4", "--ssh", "--write-yaml", "x.yaml"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--write-yaml needs --bastion" in err and err.count("\n") == 1
