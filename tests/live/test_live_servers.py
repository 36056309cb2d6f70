"""The two-server path rehearsed on one machine: an embedded testbed with an sshd per namespace and a
bastion namespace, written as a testbed.yaml + ssh_config (`hostnet testbed up --ssh --bastion
--write-yaml`), then `hostnet run single-flow --testbed PATH` and `hostnet sweep SPEC --testbed PATH`
driving both "servers" through the jump host, as a researcher's lab would be driven. Each checks the
run directory and that the journal put every setting back (controller's copy and the hosts' own)."""
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import live_ready
from hostnet import cli, store, testbed
from hostnet.hosts import HostError
from hostnet.knobs.journal_file import HOST_DIR
from hostnet.testbed import as_servers, servers

pytestmark = [pytest.mark.live, pytest.mark.skipif(live_ready() is not None, reason=str(live_ready()))]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """(embedded testbed name, the testbed.yaml written for it); torn down however the tests end."""
    d = tmp_path_factory.mktemp("servers")
    old = os.environ.get("HOSTNET_STATE_DIR")
    os.environ["HOSTNET_STATE_DIR"] = str(d / "state")
    name = f"sv{os.getpid() % 100000}"
    try:
        assert cli.main(["testbed", "up", "--name", name, "--ssh", "--bastion", "--write-yaml",
                         str(d / "lab.yaml")]) == 0
        yield name, d / "lab.yaml"
    finally:
        problems = testbed.down(name)
        if old is None:
            os.environ.pop("HOSTNET_STATE_DIR", None)
        else:
            os.environ["HOSTNET_STATE_DIR"] = old
        assert not problems


def _data_state(name: str) -> dict:
    """Every data interface's offloads and MTU, read in its namespace (what a point changes)."""
    layout = testbed.namespaces.layout_of(name)
    out = {}
    for role in layout.roles:
        ns, iface = layout.netns[role], layout.ifaces[role]
        k = subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-k", iface], capture_output=True, text=True,
                           check=True).stdout
        link = json.loads(subprocess.run(["ip", "-n", ns, "-j", "link", "show", iface], capture_output=True,
                                         text=True, check=True).stdout)[0]
        out[role] = ([ln for ln in k.splitlines() if ln.startswith(("tcp-segmentation", "generic-"))], link["mtu"])
    return out


def _restored(name: str, yaml_path: Path, before: dict) -> None:
    journal = f"{as_servers.yaml_name(name)}.journal"
    assert not (testbed.state_dir() / journal).exists(), "the controller's journal was left"
    assert not Path(HOST_DIR, journal).exists(), "the hosts' own journal copy was left"
    assert _data_state(name) == before


def _one_run(runs: Path, suffix: str) -> dict:
    campaigns = [c for c in runs.iterdir() if c.name.endswith(suffix)]
    assert len(campaigns) == 1, sorted(p.name for p in runs.iterdir())
    manifests = store.load_manifests(runs, campaigns[0].name)
    assert len(manifests) == 1
    m = manifests[0]
    assert m["status"] == "ok", m.get("error")
    assert m["testbed"]["kind"] == "servers"
    return m


def test_the_written_yaml_reaches_both_servers_through_the_bastion(lab):
    name, path = lab
    doc = yaml.safe_load(path.read_text())
    assert {h["proxy_jump"] for h in doc["hosts"].values()} == {as_servers.alias(name, "bastion")}
    tb = servers.from_yaml(path)
    for ep in tb.endpoints.values():
        assert ep.host.proxy_jump is tb.sender.host.proxy_jump  # one connection to the bastion for both
        assert ep.ip in ep.host.run(["ip", "-br", "addr", "show", "dev", ep.iface]).stdout
        assert ep.host.connection_interfaces() == ["mgmt0"]  # SSH arrived on the management network
        ep.host.close()
    tb.sender.host.proxy_jump.close()


def test_host_keys_are_checked_on_both_hops(lab, tmp_path):
    name, path = lab
    doc = yaml.safe_load(path.read_text())
    known = Path(doc["ssh"]["known_hosts"]).read_text().splitlines()
    bastion_only = [line for line in known if line.startswith("198.19.0.254 ")]
    for kept, refused in (([], as_servers.alias(name, "bastion")), (bastion_only, "sender")):
        (tmp_path / "known_hosts").write_text("".join(f"{line}\n" for line in kept))
        doc["ssh"]["known_hosts"] = str(tmp_path / "known_hosts")
        (tmp_path / "lab.yaml").write_text(yaml.safe_dump(doc))
        host = servers.from_yaml(tmp_path / "lab.yaml").sender.host
        with pytest.raises(HostError, match=f"{refused}: host key unknown"):
            host.run(["true"])


def test_hostnet_run_single_flow_on_the_testbed_yaml(lab, tmp_path):
    name, path = lab
    before = _data_state(name)
    runs = tmp_path / "runs"
    assert cli.main(["run", "single-flow", "--testbed", str(path), "--config", "tsogro", "--duration", "4",
                     "--warmup", "1", "--repetitions", "1", "--runs-dir", str(runs), "--quiet"]) == 0
    m = _one_run(runs, "-single-flow-servers")
    assert m["testbed"]["endpoints"]["sender"]["host"]["proxy_jump"]["address"] == "198.19.0.254"
    _restored(name, path, before)


def test_hostnet_sweep_spec_on_the_testbed_yaml(lab, tmp_path):
    name, path = lab
    before = _data_state(name)
    spec = tmp_path / "tiny.yaml"
    spec.write_text(yaml.safe_dump({"experiment": "single-flow", "configs": ["no-opts"], "repetitions": 1,
                                    "duration": 4, "warmup": 1}))
    runs = tmp_path / "runs"
    assert cli.main(["sweep", str(spec), "--testbed", str(path), "--runs-dir", str(runs), "--quiet"]) == 0
    _one_run(runs, "-single-flow-servers")
    _restored(name, path, before)
