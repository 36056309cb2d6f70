"""The management path is never touched by hostnet; when it cannot be told, nothing is.

The management path of a host: the interfaces carrying its default routes (IPv4 and IPv6), the
one its SSH session arrived on, any it lists in `management_interfaces`, and everything under or
over them (a VLAN's parent, a bond's or bridge's ports, the bond or bridge a port belongs to),
plus the IRQs of the physical NICs among them. A change is refused when it touches that path:
a device knob on one of them, a per-interface sysctl (net.ipv4.conf.<iface>.*, ...; ".all."
touches every interface) or the affinity of one of those IRQs. Every query that fails means
"cannot tell", and that refuses too.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..hosts import Host, HostError
from .base import KnobError, is_count
from .irq_xps import IrqAffinity
from .sysctl import Sysctl

# net.ipv4.conf.eth0.rp_filter, net.ipv6.neigh.eth0.100.base_reachable_time_ms (a VLAN's name keeps its dot)
_IFACE_SYSCTL = re.compile(r"net\.ipv[46]\.(?:conf|neigh)\.(?P<iface>.+)\.[^.]+")
EVERY_INTERFACE = "all"
# Where a NIC's interrupts are listed: MSI(-X) vectors, else the legacy line. A virtio NIC's
# net device hangs under a virtio device whose PCI parent holds them.
_NIC_IRQS = r"""
d=/sys/class/net/$1/device
[ -e "/sys/class/net/$1" ] || { echo absent; exit 0; }
[ -e "$d" ] || { echo virtual; exit 0; }
case "$(readlink "$d/subsystem")" in */virtio) d=$d/.. ;; esac
if [ -d "$d/msi_irqs" ]; then ls "$d/msi_irqs"; elif [ -r "$d/irq" ]; then cat "$d/irq"; fi
"""


def device_of(key: str) -> str:
    """The interface a device-scoped key names ("eth0", "eth0/rx-0", "eth0/5")."""
    return str(key).split("/", 1)[0]


def interfaces_touched(knob, key: str) -> list[str]:
    """The interfaces a change of knob[key] acts on (EVERY_INTERFACE for net.*.conf.all.*)."""
    if knob.scope == "device":
        return [device_of(key)]
    if isinstance(knob, Sysctl):
        m = _IFACE_SYSCTL.fullmatch(str(key))
        # "default" only seeds interfaces created later; the management ones exist already
        if m and m["iface"] != "default":
            return [m["iface"]]
    return []


def irq_touched(knob, key: str) -> int | None:
    return int(key) if isinstance(knob, IrqAffinity) and is_count(str(key)) else None


def _json(host: Host, argv: list[str]) -> list:
    try:
        res = host.run(argv, check=False)
    except HostError as exc:
        raise KnobError(f"{host.name}: cannot tell its management interfaces ({exc}); refusing interface "
                        f"changes") from exc
    # a kernel without IPv6 has no IPv6 default route, which is what we asked
    if res.returncode != 0 and "-6" in argv and "Address family not supported" in res.stderr:
        return []
    try:
        if res.returncode != 0:
            raise ValueError(res.stderr.strip() or f"exit status {res.returncode}")
        data = json.loads(res.stdout or "[]")
        if not isinstance(data, list):
            raise ValueError("not a list")
        return data
    except ValueError as exc:
        raise KnobError(f"{host.name}: cannot tell its management interfaces ({' '.join(argv)}: {exc}); "
                        f"refusing interface changes") from exc


def management_path(roots: set[str], links: list[dict]) -> set[str]:
    """roots plus every interface below or above them in `ip -j -d link` (VLAN parent, bond or
    bridge ports, the master a port belongs to), repeatedly. A peer in another namespace
    (link_netnsid) is not on this host's path."""
    by_name = {ln.get("ifname"): ln for ln in links if isinstance(ln, dict)}
    path, todo = set(), list(roots)
    while todo:
        dev = todo.pop()
        if dev in path:
            continue
        path.add(dev)
        info = by_name.get(dev, {})
        if info.get("link") and "link_netnsid" not in info:
            todo.append(info["link"])  # lower device (VLAN, macvlan, ...)
        if info.get("master"):
            todo.append(info["master"])  # the bond or bridge it is a port of
        todo += [name for name, ln in by_name.items() if ln.get("master") == dev]  # its ports
    return path


def nic_irqs(host: Host, iface: str) -> set[int] | None:
    """The IRQs of a NIC (empty for a virtual or absent device); None when it cannot be told."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,15}", iface):
        return None
    try:
        res = host.run(["sh", "-c", _NIC_IRQS, "sh", iface], check=False)
    except HostError:
        return None
    words = res.stdout.split()
    if res.returncode != 0:
        return None
    if words in (["absent"], ["virtual"]):
        return set()
    irqs = {int(w) for w in words if is_count(w) and int(w) > 0}
    return irqs or None


@dataclass
class Management:
    """One host's management path, found once per journal."""
    interfaces: set[str]
    _irqs: set[int] | None = field(default=None, repr=False)

    def irqs(self, host: Host) -> set[int]:
        if self._irqs is None:
            found: set[int] = set()
            for dev in sorted(self.interfaces):
                got = nic_irqs(host, dev)
                if got is None:
                    raise KnobError(f"{host.name}: cannot tell which IRQs belong to the management interface "
                                    f"{dev}; refusing IRQ affinity changes")
                found |= got
            self._irqs = found
        return self._irqs


def management_interfaces(host: Host) -> set[str]:
    """The host's management path (see the module doc); KnobError when it cannot be told."""
    roots = set(getattr(host, "management_interfaces", ()) or ())
    if hasattr(host, "connection_interfaces"):
        try:
            roots |= set(host.connection_interfaces())
        except HostError as exc:
            raise KnobError(f"{host.name}: cannot tell which interface its SSH session uses ({exc}); refusing "
                            f"interface changes") from exc
    for family in ("-4", "-6"):
        roots |= {r["dev"] for r in _json(host, ["ip", "-j", family, "route", "show", "default"])
                  if isinstance(r, dict) and r.get("dev")}
    if not roots:
        return set()
    return management_path(roots, _json(host, ["ip", "-j", "-d", "link", "show"]))


def check(host: Host, knob, key: str, cache: dict[str, Management], ident: str) -> None:
    """Raise KnobError if changing knob[key] on host would touch its management path; the path is
    looked up only for changes that could touch it, once per host (cache[ident])."""
    ifaces, irq = interfaces_touched(knob, key), irq_touched(knob, key)
    if not ifaces and irq is None:
        return
    if ident not in cache:
        cache[ident] = Management(management_interfaces(host))
    mgmt = cache[ident]
    for iface in ifaces:
        if iface == EVERY_INTERFACE and mgmt.interfaces:
            raise KnobError(f"{host.name}: refusing to change {knob.name}[{key}]: it applies to every interface, "
                            f"including the management path ({', '.join(sorted(mgmt.interfaces))})")
        refuse_management(host, iface, mgmt.interfaces)
    if irq is not None and irq in mgmt.irqs(host):
        raise KnobError(f"{host.name}: refusing to change the affinity of IRQ {irq}: it belongs to a management "
                        f"interface ({', '.join(sorted(mgmt.interfaces))})")


def refuse_management(host: Host, iface: str, mgmt: set[str]) -> None:
    if iface in mgmt:
        raise KnobError(f"{host.name}: refusing to change {iface}: it carries the management or default-route "
                        f"traffic (or lies under or over an interface that does); choose the data interface")
