"""The embedded testbed described as real servers: a testbed.yaml, and the ssh_config it names,
reaching each namespace through its own sshd. Used through them, the embedded testbed runs the code
path a researcher's two servers run (servers.from_yaml, ssh_config aliases, SshHost, ProxyJump),
on one machine.

Without a bastion each endpoint is an ssh_config alias whose ProxyCommand is nc inside its
namespace. With one (`up(..., bastion=True)`) the endpoints are addressed on the management
network, and the testbed.yaml says `proxy_jump: <the bastion's alias>`; only the bastion needs the
ProxyCommand, as a lab's bastion is the one machine the controller reaches directly. Host keys are
checked on every hop against the testbed's own known_hosts.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from ..hosts.sshd import proxy_command
from .base import TestbedError, role_kind
from .namespaces import BASTION_IP, has_ipv6, layout_of, ssh_dir
from . import servers


def yaml_name(name: str) -> str:
    """The testbed.yaml's own name: its journal must not be the embedded testbed's."""
    return f"{name}-servers"


def alias(name: str, who: str) -> str:
    return f"hostnet-{name}-{who}"


def ssh_config_text(name: str) -> str:
    """Host entries as a researcher's ~/.ssh/config would have them for these 'servers'."""
    layout = layout_of(name)
    key = ssh_dir(name) / "client_ed25519"
    hops = {"bastion": (BASTION_IP, layout.netns["bastion"])} if layout.bastion else {
        role: (layout.ips[role], layout.netns[role]) for role in layout.roles}
    lines = [f"# hostnet testbed up --name {name} --ssh{' --bastion' if layout.bastion else ''} --write-yaml: "
             f"how the controller reaches embedded testbed {name!r}", ""]
    for who, (address, netns) in hops.items():
        lines += [f"Host {alias(name, who)}", f"    HostName {address}", "    User root", f"    IdentityFile {key}",
                  f"    ProxyCommand {proxy_command(netns)}", ""]
    return "\n".join(lines)


def describe(name: str, ssh_config_path: Path) -> dict:
    """The testbed.yaml document (servers.SCHEMA) for embedded testbed `name`, which is up with sshds."""
    layout = layout_of(name)
    if not layout.ssh:
        raise TestbedError(f"testbed {name!r} has no sshds: bring it up with --ssh to describe it as servers")
    hosts = {}
    for role in layout.roles:
        if layout.bastion:  # the management address, behind the bastion; the key named here
            host = {"address": layout.mgmt_ips[role], "user": "root", "key": str(ssh_dir(name) / "client_ed25519"),
                    "proxy_jump": alias(name, "bastion")}
        else:  # an alias: address, user, key and the way in come from the ssh_config
            host = {"address": alias(name, role)}
        hosts[role] = {**host, "data_iface": layout.ifaces[role], "data_ip": layout.ips[role],
                       **({"data_ip6": layout.ips6[role]} if has_ipv6() else {}),
                       "cpus": {"app_cpus": layout.cpus(role)}}
    return {"name": yaml_name(name),
            "ssh": {"config": str(ssh_config_path), "known_hosts": str(ssh_dir(name) / "known_hosts")},
            "hosts": hosts,
            "roles": {"senders": [r for r in layout.roles if role_kind(r) == "sender"],
                      "receivers": [r for r in layout.roles if role_kind(r) == "receiver"]}}


def write(name: str, path: str | Path) -> tuple[Path, Path]:
    """Write PATH (the testbed.yaml) and PATH's stem + .ssh_config next to it; both are checked by
    loading them as any testbed.yaml is. Returns (testbed.yaml, ssh_config)."""
    path = Path(path).resolve()
    conf = path.with_name(path.stem + ".ssh_config")
    doc = describe(name, conf)
    path.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(ssh_config_text(name))
    path.write_text(f"# The embedded testbed {name!r} as {len(doc['hosts'])} servers reached over SSH"
                    + (" through a bastion (ProxyJump)" if layout_of(name).bastion else "")
                    + f"; valid while it is up.\n# hostnet run single-flow --testbed {path}\n"
                    + yaml.safe_dump(doc, sort_keys=False))
    servers.ssh_config_of(servers.load(path), path)
    return path, conf
