"""Kernel sysctls, each knowing whether it is per network namespace or global."""
from __future__ import annotations

from ..hosts import Host, HostError
from .base import Knob, KnobError

# Measured on the project VM (see docs/testbed.md): these exist only in the initial
# namespace, or are read-only inside a child namespace, and must be set on the root host.
GLOBAL_SYSCTLS = {
    "net.core.rps_sock_flow_entries", "net.core.netdev_budget", "net.core.netdev_budget_usecs",
    "net.core.netdev_max_backlog", "net.core.rmem_max", "net.core.wmem_max",
    "net.core.rmem_default", "net.core.wmem_default", "net.core.busy_poll", "net.core.busy_read",
    "net.ipv4.tcp_allowed_congestion_control", "net.ipv4.tcp_mem",
}


def sysctl_path(name: str) -> str:
    if not name or "/" in name or ".." in name or not all(p for p in name.split(".")):
        raise KnobError(f"not a sysctl name: {name!r}")
    return "/proc/sys/" + name.replace(".", "/")


class Sysctl(Knob):
    """Key is the sysctl name, e.g. net.ipv4.tcp_rmem."""

    name = "sysctl"

    @staticmethod
    def scope_of(key: str) -> str:
        return "global" if key in GLOBAL_SYSCTLS else "netns"

    def read(self, host: Host, key: str) -> str:
        try:
            return host.read_text(sysctl_path(key)).strip()
        except HostError as exc:
            raise KnobError(f"{host.name}: sysctl {key} is not available ({exc})") from exc

    def _write(self, host: Host, key: str, value: str) -> None:
        host.write_text(sysctl_path(key), f"{value}\n")
