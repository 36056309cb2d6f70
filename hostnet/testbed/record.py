"""A campaign's record of what its testbed could do (stored in the campaign directory
by store.Campaign: capabilities.json).

Sections that need hardware a testbed may lack (multi-socket NUMA, DDIO, an IOMMU) write it in run
mode, and replay it, so "not testable here" and its reason come from the detection made on that
testbed, not from the machine the notebook is replayed on.
"""
from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path

from ..hosts import Host, HostError, LocalHost
from . import capabilities
from .base import rehearsal_label
from .capabilities import Capability
from . import servers

# grid.placement's points: the receiver's application on a core of the NIC's NUMA node, or of another
NUMA_PLACEMENTS = ("nic-local", "nic-remote")


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11] (the kernel's cpulist format)."""
    cpus: list[int] = []
    for part in filter(None, text.strip().split(",")):
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def numa_layout(host: Host, iface: str | None) -> dict:
    """NUMA nodes with their CPUs, and the node the NIC behind `iface` is attached to (None: no PCI device,
    e.g. veth, or the platform does not say)."""
    listing = host.run(["sh", "-c", "ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null; true"]).stdout.split()
    nodes = {}
    for path in sorted(listing, key=lambda p: int(re.sub(r"\D", "", p.rsplit("/", 1)[-1]) or 0)):
        node = int(path.rsplit("node", 1)[-1])
        try:
            nodes[node] = parse_cpulist(host.read_text(f"{path}/cpulist"))
        except HostError:
            nodes[node] = []
    nic_node = None
    if iface:
        try:
            value = int(host.read_text(f"/sys/class/net/{iface}/device/numa_node").strip())
            nic_node = value if value >= 0 else None  # -1: the platform does not report it
        except (HostError, ValueError):
            nic_node = None
    return {"nodes": {str(k): v for k, v in nodes.items()} or {"0": []}, "nic_node": nic_node, "iface": iface}


def placement_plan(layout: dict) -> dict[str, list[int]]:
    """Receiver application CPUs per placement (grid.placement, §3.6 Fig. 10c): one core on the NIC's
    node, one on another node. Raises MissingCapability where the layout has no such pair."""
    nodes = {int(k): v for k, v in layout["nodes"].items()}
    problems = []
    if len(nodes) < 2:
        problems.append(f"one NUMA node ({len(nodes)} in /sys/devices/system/node): nothing is NIC-remote")
    if layout.get("nic_node") is None:
        what = layout.get("iface") or "the embedded testbed's veth"
        problems.append(f"{what} has no NIC reporting a NUMA node (/sys/class/net/IFACE/device/numa_node)")
    if problems:
        raise capabilities.MissingCapability("; ".join(problems))
    local = nodes.get(layout["nic_node"])
    remote = [n for n in sorted(nodes) if n != layout["nic_node"] and nodes[n]]
    if not local:
        raise capabilities.MissingCapability(f"NUMA node {layout['nic_node']} (the NIC's) has no CPUs")
    if not remote:
        raise capabilities.MissingCapability(f"no NUMA node other than the NIC's ({layout['nic_node']}) has CPUs")
    return {"nic-local": local[:1], "nic-remote": nodes[remote[0]][:1]}


def detect_testbed(testbed_file: str = "") -> tuple[str, dict[str, Host], dict[str, str | None]]:
    """(label, hosts by name, data interface by host name): the embedded testbed's machine, or the
    receivers and senders of a testbed.yaml."""
    if not testbed_file:
        return "embedded testbed (veth + netns on this machine)", {"embedded machine": LocalHost("embedded machine")}, \
            {"embedded machine": None}
    tb = servers.from_yaml(testbed_file)
    hosts = {e.host.name: e.host for e in tb.endpoints.values()}
    ifaces = {e.host.name: e.iface for e in tb.endpoints.values()}
    return f"{tb.kind} testbed from {Path(testbed_file).name}{rehearsal_label(tb.rehearsal)}", hosts, ifaces


def detect(testbed_file: str = "") -> dict:
    label, hosts, ifaces = detect_testbed(testbed_file)
    caps = {name: capabilities.detect(h, ifaces[name]) for name, h in hosts.items()}
    layout = {name: numa_layout(h, ifaces[name]) for name, h in hosts.items()}
    return make_record(label, caps, layout)


def make_record(label: str, caps_by_host: dict[str, dict[str, Capability]], numa: dict[str, dict]) -> dict:
    return {"testbed": label,
            "capabilities": {h: {n: asdict(c) for n, c in caps.items()} for h, caps in caps_by_host.items()},
            "numa": numa}



def capability(record: dict, name: str) -> dict[str, Capability]:
    """One capability on every host of the record."""
    return {h: Capability(**caps[name]) for h, caps in record["capabilities"].items() if name in caps}
