"""Real servers described by a testbed.yaml, driven over SSH (fabric).

    name: lab100g
    ssh: {known_hosts: ~/.ssh/known_hosts, insecure_accept_unknown_keys: false,
          connect_timeout_s: 10, command_timeout_s: 120,
          config: ~/.ssh/config}     # the default; false: no ssh_config at all
    hosts:
      alpha:
        address: 192.0.2.10         # SSH address (management network), or an ssh_config alias
        user: root                   # non-root: commands go through sudo
        key: ~/.ssh/id_ed25519
        proxy_jump: me@bastion.lab   # as ssh -J (optional; "none": not even the ssh_config's)
        data_iface: ens1f0np0        # the NIC under test; never the management interface
        data_ip: 198.18.1.1
        data_ip6: 2001:2:0:1::1      # optional: the NIC's IPv6 address, for flows with ip_version 6
        cpus: {numa_nodes: 4, nic_node: 0, app_cpus: [0, 1, 2], irq_cpus: [6]}
        tools: {iperf3: /usr/bin/iperf3}
    roles: {senders: [alpha], receivers: [beta]}

The file is checked against SCHEMA (JSON Schema) before anything is built: errors name the file
and the key. Each host is its own machine: probes run on every host. A host's address is looked up
in the ssh_config (hosts/ssh_config.py: HostName, User, Port, IdentityFile, ProxyJump,
ProxyCommand), and what this file says wins over it.
"""
from __future__ import annotations

import ipaddress
import os
from pathlib import Path


from ..hosts import HostError, ProcessTag, ssh_config
from ..hosts.ssh import DEFAULT_COMMAND_TIMEOUT_S, DEFAULT_CONNECT_TIMEOUT_S, SshOptions
from .. import schema, inputfiles
from ..knobs import Journal, restore_copies
from ..knobs.journal_lock import describe_holder, held_elsewhere
from .base import Endpoint, Testbed, TestbedError, role_name, state_dir

# RFC 5737 documentation ranges: the example file's placeholders, never a real server.
_PLACEHOLDERS = [ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")]


class TestbedFileError(TestbedError):
    __test__ = False


# Host names become file names in run directories and labels in figures: safe identifiers only.
_HOST_NAME = {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_-]{0,31}\\Z",
              "description": "a host name (a letter, then letters, digits, '_' or '-'; at most 32)"}
_CPU_LIST = {"type": "array", "minItems": 1, "uniqueItems": True,
             "items": {"type": "integer", "minimum": 0, "description": "a CPU number"},
             "description": "a non-empty list of distinct CPU numbers"}
_SECONDS = {"type": "number", "exclusiveMinimum": 0, "description": "a number of seconds above 0"}
_HOST = {
    "type": "object", "description": "a mapping of host settings",
    "required": ["address", "data_iface", "data_ip", "cpus"], "additionalProperties": False,
    "properties": {
        "address": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9.:_-]*\\Z",
                    "description": "a host name or IP address"},
        "user": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9._-]{0,31}\\Z", "description": "a user name"},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535, "description": "a port number (1-65535)"},
        "key": {"type": "string", "pattern": "^[^\\n\\x00]+\\Z", "description": "a key file path"},
        # ssh's -J syntax; each hop may be an ssh_config alias. "none": no jump even if ssh_config has one
        "proxy_jump": {"type": "string", "pattern": "^[^\\s,][^\\s]*\\Z",
                       "description": "a jump host list as ssh -J takes it ([user@]host[:port][,...]) or none"},
        "data_iface": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,15}\\Z",
                       "description": "an interface name (1-15 letters, digits, '_', '.', '-')"},
        "data_ip": {"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}],
                    "description": "an IP address"},
        "data_ip6": {"type": "string", "format": "ipv6", "description": "an IPv6 address"},
        "cpus": {"type": "object", "description": "a mapping with app_cpus (and irq_cpus, numa_nodes, nic_node)",
                 "required": ["app_cpus"], "additionalProperties": False,
                 "properties": {"app_cpus": _CPU_LIST, "irq_cpus": _CPU_LIST,
                                "numa_nodes": {"type": "integer", "minimum": 1, "description": "a node count"},
                                "nic_node": {"type": "integer", "minimum": 0, "description": "a NUMA node number"}}},
        "tools": {"type": "object", "description": "a mapping of tool name to path",
                  "propertyNames": {"pattern": "^[A-Za-z0-9_.+-]{1,64}\\Z", "description": "a tool name"},
                  "additionalProperties": {"type": "string", "pattern": "^[^\\n\\x00]+\\Z",
                                           "description": "a path"}},
    },
}
_ROLE_LIST = {"type": "array", "minItems": 1, "uniqueItems": True, "items": _HOST_NAME,
              "description": "a non-empty list of host names"}
SCHEMA = {
    "type": "object", "description": "a mapping (name, ssh, hosts, roles)",
    "required": ["name", "hosts", "roles"], "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z0-9-]{1,32}\\Z",
                 "description": "a testbed name (1-32 lowercase letters, digits or '-')"},
        "ssh": {"type": ["object", "null"], "description": "a mapping of SSH settings", "additionalProperties": False,
                "properties": {
                    "known_hosts": {"type": "string", "pattern": "^[^\\n\\x00]+\\Z", "description": "a file path"},
                    # the ssh_config whose Host entries apply (aliases, User, Port, IdentityFile,
                    # ProxyJump, ProxyCommand); false: none at all
                    "config": {"anyOf": [{"type": "string", "pattern": "^[^\\n\\x00]+\\Z"}, {"const": False}],
                               "description": "an ssh_config file path, or false"},
                    # a YAML boolean: the string "false" must not turn host-key checking off
                    "insecure_accept_unknown_keys": {"type": "boolean", "description": "true or false"},
                    # fabric takes whole seconds: it cut 0.5 to 0, which meant no timeout at all
                    "connect_timeout_s": {"type": "integer", "minimum": 1, "maximum": 3600,
                                          "description": "a whole number of seconds from 1 to 3600"},
                    "command_timeout_s": _SECONDS}},
        "hosts": {"type": "object", "minProperties": 1, "propertyNames": _HOST_NAME,
                  "additionalProperties": _HOST, "description": "a non-empty mapping of host name to host"},
        # why no number from these hosts is a measurement (the NIC rehearsal's emulated NICs): every
        # run records it and analysis leaves the runs out (analysis.flags)
        "rehearsal": {"type": "string", "pattern": "^[^\\n\\x00]{1,200}\\Z",
                      "description": "a one-line reason, up to 200 characters"},
        "roles": {"type": "object", "description": "a mapping with senders and receivers",
                  "required": ["senders", "receivers"], "additionalProperties": False,
                  "properties": {"senders": _ROLE_LIST, "receivers": _ROLE_LIST}},
    },
}


def load(path: str | os.PathLike) -> dict:
    """Read and validate a testbed.yaml against SCHEMA (and the roles against the hosts);
    returns the checked description. Every problem is a TestbedFileError naming file and key."""
    path = Path(path)
    try:
        doc = inputfiles.load(path)
    except inputfiles.InputFileError as exc:
        raise TestbedFileError(str(exc)) from None
    found = schema.problems(doc, SCHEMA)
    if not found:
        for h, spec in doc["hosts"].items():
            try:
                if any(ipaddress.ip_address(spec["address"]) in net for net in _PLACEHOLDERS):
                    found.append(f"hosts.{h}.address {spec['address']} is a documentation placeholder; put your "
                                 f"server's SSH address there")
            except ValueError:
                pass  # a host name
            if "data_ip6" in spec and ipaddress.ip_address(spec["data_ip6"]).is_link_local:
                found.append(f"hosts.{h}.data_ip6 {spec['data_ip6']} is link-local (fe80::/10): it needs a scope, "
                             f"which flows are not given; use a global or unique-local address")
        for kind in ("senders", "receivers"):
            found += [f"roles.{kind} names {n!r}, which is not under hosts"
                      for n in doc["roles"][kind] if n not in doc["hosts"]]
    if found:
        raise TestbedFileError(f"{path}: " + f"\n{path}: ".join(found))
    return doc


def ssh_config_of(doc: dict, path: str | os.PathLike):
    """The ssh_config the file's hosts are resolved through: ssh.config (relative to the file), else
    ~/.ssh/config where it exists; none with `config: false`."""
    named = (doc.get("ssh") or {}).get("config")
    if named is False:
        return None
    where = Path(os.path.expanduser(named or ssh_config.DEFAULT_PATH))
    if not where.is_absolute():
        where = Path(path).parent / where
    if named and not where.exists():  # one the file names must be there; ~/.ssh/config may be absent
        raise TestbedFileError(f"{path}: ssh.config {where} does not exist")
    try:
        return ssh_config.load(where)
    except ssh_config.SshConfigError as exc:
        raise TestbedFileError(f"{path}: ssh.config: {exc}") from exc


def from_yaml(path: str | os.PathLike) -> Testbed:
    doc = load(path)
    ssh = doc.get("ssh", {}) or {}
    config = ssh_config_of(doc, path)
    known = os.path.expanduser(ssh["known_hosts"]) if ssh.get("known_hosts") else None
    tag = ProcessTag(f"{state_dir()}/{doc['name']}")
    endpoints: dict[str, Endpoint] = {}
    machines, jumps = {}, {}
    for kind, key in (("sender", "senders"), ("receiver", "receivers")):
        for i, h in enumerate(doc["roles"][key]):
            spec = doc["hosts"][h]
            role = role_name(kind, i)
            if h not in machines:  # testbed.yaml's own values first, then the ssh_config's, then defaults
                try:
                    options = SshOptions(
                        key_filename=spec.get("key"), known_hosts=known,
                        insecure_accept_unknown_keys=ssh.get("insecure_accept_unknown_keys", False),
                        connect_timeout=ssh.get("connect_timeout_s", DEFAULT_CONNECT_TIMEOUT_S),
                        command_timeout=ssh.get("command_timeout_s", DEFAULT_COMMAND_TIMEOUT_S), tag=tag,
                        tool_paths=spec.get("tools") or {})
                    machines[h] = ssh_config.build(h, spec["address"], config, user=spec.get("user"),
                                                   port=spec.get("port"), proxy_jump=spec.get("proxy_jump"),
                                                   options=options, jumps=jumps)
                except HostError as exc:
                    raise TestbedFileError(f"{path}: hosts.{h}: {exc}") from exc
            endpoints[role] = Endpoint(role, machines[h], spec["data_iface"], spec["data_ip"],
                                       list(spec["cpus"]["app_cpus"]), machine=h,
                                       irq_cpus=list(spec["cpus"].get("irq_cpus", [])), ip6=spec.get("data_ip6"))
    # Each host keeps its own lines too (knobs/journal_file.HOST_DIR): the controller's state
    # directory is often a tmpfs, gone after a reboot.
    return Testbed(doc["name"], "servers", endpoints, machines,
                   Journal(state_dir() / f"{doc['name']}.journal", on_hosts=True), notes=[f"servers from {path}"],
                   rehearsal=doc.get("rehearsal", ""))


def restore(path: str | os.PathLike) -> tuple[list[str], list[str]]:
    """After a crash on real servers: stop hostnet's processes on every host, put settings back from
    the controller's journal and every host's own copy (either is enough). Returns (problems, the
    copies found); no copy found at all is for the caller to report. A journal a live session
    holds is refused before anything is stopped."""
    tb = from_yaml(path)
    holder = held_elsewhere(tb.journal.path)
    if holder is not None:
        return [f"{tb.journal.path} is in use by {describe_holder(holder)}; not restoring under a live session"], []
    problems = []
    for name, host in tb.machines.items():
        try:
            ProcessTag(f"{state_dir()}/{tb.name}").kill_on(host)
        except Exception as exc:  # one unreachable host must not stop the others' restore
            problems.append(f"{name}: {exc}")
    more, sources = restore_copies(tb.journal.path, tb.machines.values(), host_copies=True)
    return problems + more, sources
