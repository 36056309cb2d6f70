"""Real servers described by a testbed.yaml, driven over SSH (fabric).

    name: lab100g
    ssh: {known_hosts: ~/.ssh/known_hosts, insecure_accept_unknown_keys: false,
          connect_timeout_s: 10, command_timeout_s: 120}
    hosts:
      alpha:
        address: 192.0.2.10         # SSH address (management network)
        user: root                   # non-root: commands go through sudo
        key: ~/.ssh/id_ed25519
        data_iface: ens1f0np0        # the NIC under test; never the management interface
        data_ip: 198.18.1.1
        cpus: {numa_nodes: 4, nic_node: 0, app_cpus: [0, 1, 2], irq_cpus: [6]}
        tools: {iperf3: /usr/bin/iperf3}
    roles: {senders: [alpha], receivers: [beta]}

Errors name the file and the key. Each host is its own machine: probes run on every host.
"""
from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path

import yaml

from ..hosts import ProcessTag, SshHost
from ..hosts.ssh import DEFAULT_COMMAND_TIMEOUT_S, DEFAULT_CONNECT_TIMEOUT_S
from ..knobs import Journal
from .base import Endpoint, Testbed, TestbedError, role_name, state_dir

_IFACE = re.compile(r"[A-Za-z0-9_.-]{1,15}")
# RFC 5737 documentation ranges: the example file's placeholders, never a real server.
_PLACEHOLDERS = [ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")]


class TestbedFileError(TestbedError):
    __test__ = False


def _need(d: dict, key: str, where: str, path: Path, kind=None):
    if not isinstance(d, dict) or key not in d:
        raise TestbedFileError(f"{path}: {where}.{key} is missing")
    value = d[key]
    if kind is not None and not isinstance(value, kind):
        raise TestbedFileError(f"{path}: {where}.{key} must be a {kind.__name__}, not {value!r}")
    return value


def _cpu_list(value, where: str, path: Path) -> list[int]:
    if not isinstance(value, list) or not value or not all(isinstance(c, int) and c >= 0 for c in value):
        raise TestbedFileError(f"{path}: {where} must be a non-empty list of CPU numbers")
    return value


def load(path: str | os.PathLike) -> dict:
    """Read and validate a testbed.yaml; returns the checked description."""
    path = Path(path)
    try:
        with open(path) as f:  # a stream, so a syntax error names the file, not "<unicode string>"
            doc = yaml.safe_load(f)
    except OSError as exc:
        raise TestbedFileError(f"{path}: cannot read ({exc.strerror})") from exc
    except yaml.YAMLError as exc:
        raise TestbedFileError(f"{path}: not valid YAML ({exc})") from exc
    name = _need(doc, "name", "", path, str)
    if not re.fullmatch(r"[a-z0-9-]{1,32}", name):
        raise TestbedFileError(f"{path}: name must be 1-32 lowercase letters, digits or '-'")
    hosts = _need(doc, "hosts", "", path, dict)
    for h, spec in hosts.items():
        where = f"hosts.{h}"
        address = _need(spec, "address", where, path, str)
        try:
            if any(ipaddress.ip_address(address) in net for net in _PLACEHOLDERS):
                raise TestbedFileError(f"{path}: {where}.address {address} is a documentation placeholder; "
                                       f"put your server's SSH address there")
        except ValueError:
            pass  # a host name
        iface = _need(spec, "data_iface", where, path, str)
        if not _IFACE.fullmatch(iface):
            raise TestbedFileError(f"{path}: {where}.data_iface {iface!r} is not an interface name")
        try:
            ipaddress.ip_address(_need(spec, "data_ip", where, path, str))
        except ValueError as exc:
            raise TestbedFileError(f"{path}: {where}.data_ip is not an IP address") from exc
        cpus = _need(spec, "cpus", where, path, dict)
        _cpu_list(_need(cpus, "app_cpus", f"{where}.cpus", path), f"{where}.cpus.app_cpus", path)
        if "irq_cpus" in cpus:
            _cpu_list(cpus["irq_cpus"], f"{where}.cpus.irq_cpus", path)
        for key in ("numa_nodes", "nic_node"):
            if key in cpus and not isinstance(cpus[key], int):
                raise TestbedFileError(f"{path}: {where}.cpus.{key} must be an integer")
        for key in spec:
            if key not in ("address", "user", "port", "key", "data_iface", "data_ip", "cpus", "tools"):
                raise TestbedFileError(f"{path}: {where}.{key} is not a known key")
    roles = _need(doc, "roles", "", path, dict)
    for kind in ("senders", "receivers"):
        names = _need(roles, kind, "roles", path, list)
        if not names:
            raise TestbedFileError(f"{path}: roles.{kind} is empty")
        for n in names:
            if n not in hosts:
                raise TestbedFileError(f"{path}: roles.{kind} names {n!r}, which is not under hosts")
    return doc


def from_yaml(path: str | os.PathLike) -> Testbed:
    doc = load(path)
    ssh = doc.get("ssh", {}) or {}
    known = os.path.expanduser(ssh.get("known_hosts", "~/.ssh/known_hosts"))
    tag = ProcessTag(f"{state_dir()}/{doc['name']}")
    endpoints: dict[str, Endpoint] = {}
    machines = {}
    for kind, key in (("sender", "senders"), ("receiver", "receivers")):
        for i, h in enumerate(doc["roles"][key]):
            spec = doc["hosts"][h]
            role = role_name(kind, i)
            host = SshHost(spec["address"], user=spec.get("user", "root"), port=spec.get("port", 22), name=h,
                           key_filename=os.path.expanduser(spec["key"]) if spec.get("key") else None,
                           known_hosts=known,
                           insecure_accept_unknown_keys=bool(ssh.get("insecure_accept_unknown_keys", False)),
                           connect_timeout=ssh.get("connect_timeout_s", DEFAULT_CONNECT_TIMEOUT_S),
                           command_timeout=ssh.get("command_timeout_s", DEFAULT_COMMAND_TIMEOUT_S), tag=tag,
                           tool_paths=spec.get("tools") or {})
            endpoints[role] = Endpoint(role, host, spec["data_iface"], spec["data_ip"],
                                       list(spec["cpus"]["app_cpus"]), machine=h)
            machines.setdefault(h, host)
    return Testbed(doc["name"], "servers", endpoints, machines, Journal(state_dir() / f"{doc['name']}.journal"),
                   notes=[f"servers from {path}"])


def restore(path: str | os.PathLike) -> list[str]:
    """After a crash on real servers: stop hostnet's processes on every host, put settings back."""
    from ..knobs import restore_journal
    tb = from_yaml(path)
    problems = []
    for name, host in tb.machines.items():
        try:
            ProcessTag(f"{state_dir()}/{tb.name}").kill_on(host)
        except Exception as exc:  # one unreachable host must not stop the others' restore
            problems.append(f"{name}: {exc}")
    return problems + restore_journal(state_dir() / f"{tb.name}.journal")
