"""The management interface (default route, SSH) is never touched by hostnet."""
from __future__ import annotations

import json

from ..hosts import Host, HostError
from .base import KnobError


def management_interfaces(host: Host) -> set[str]:
    """Interfaces carrying a default route in the host's namespace (IPv4 and IPv6).

    An SSH host adds the interface its session arrived on (connection_interfaces), and any
    host may list more in a `management_interfaces` attribute.
    """
    found = set(getattr(host, "management_interfaces", ()) or ())
    if hasattr(host, "connection_interfaces"):
        try:
            found |= set(host.connection_interfaces())
        except HostError:
            pass
    for family in ("-4", "-6"):
        try:
            res = host.run(["ip", "-j", family, "route", "show", "default"], check=False)
        except HostError:
            continue
        if res.returncode == 0 and res.stdout.strip():
            found |= {r["dev"] for r in json.loads(res.stdout) if r.get("dev")}
    return found


def device_of(key: str) -> str:
    """The interface a device-scoped key names ("eth0", "eth0/rx-0", "eth0/5")."""
    return str(key).split("/", 1)[0]


def refuse_management(host: Host, iface: str, mgmt: set[str]) -> None:
    if iface in mgmt:
        raise KnobError(f"{host.name}: refusing to change {iface}: it carries the management or default-route "
                        f"traffic; choose the data interface")
