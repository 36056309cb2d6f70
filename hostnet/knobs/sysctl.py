"""Kernel sysctls, each knowing whether it is per network namespace or global."""
from __future__ import annotations

import re

from ..hosts import Host, HostError
from .base import Knob, KnobError

# Measured on the project VM (see docs/embedded-testbed.md): these exist only in the initial
# namespace, or are read-only inside a child namespace, and must be set on the root host.
GLOBAL_SYSCTLS = {
    "net.core.rps_sock_flow_entries", "net.core.netdev_budget", "net.core.netdev_budget_usecs",
    "net.core.netdev_max_backlog", "net.core.rmem_max", "net.core.wmem_max",
    "net.core.rmem_default", "net.core.wmem_default", "net.core.busy_poll", "net.core.busy_read",
    "net.ipv4.tcp_allowed_congestion_control", "net.ipv4.tcp_mem",
    # kernel_patch/ (rx_prof) registers its sysctls for the initial namespace only
    "net.core.packet_loss_gen", "net.core.rx_prof_port", "net.core.rx_prof_ifindex",
    "net.core.rx_prof_skb_len", "net.core.rx_prof_lat_sample", "net.core.gso_honour_off",
}


def sysctl_path(name: str) -> str:
    if not name or "/" in name or ".." in name or not all(p for p in name.split(".")):
        raise KnobError(f"not a sysctl name: {name!r}")
    return "/proc/sys/" + name.replace(".", "/")


def one_space(value) -> str:
    """Tabs and runs of spaces as one space (a newline stays, for the validator to refuse)."""
    return re.sub(r"[ \t]+", " ", str(value)).strip(" ")


class Sysctl(Knob):
    """Key is the sysctl name, e.g. net.ipv4.tcp_rmem."""

    name = "sysctl"

    @staticmethod
    def scope_of(key: str) -> str:
        return "global" if key in GLOBAL_SYSCTLS else "netns"

    def read(self, host: Host, key: str) -> str:
        # Multi-value sysctls read back tab-separated (tcp_rmem, ip_local_port_range) and are written
        # space-separated: the journal keeps the one form the validator and the kernel both take.
        try:
            return one_space(host.read_text(sysctl_path(key)).strip())
        except HostError as exc:
            raise KnobError(f"{host.name}: sysctl {key} is not available ({exc})") from exc

    def validate(self, key: str, value: str) -> None:
        _validate_sysctl(key, one_space(value))

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        host.write_text(sysctl_path(key), one_space(value) + "\n")


_TRIPLE = re.compile(r"^[0-9]+\s+[0-9]+\s+[0-9]+\Z")
_INT = re.compile(r"^[0-9]+\Z")
# Value shapes of the sysctls the study sets; others only need to be one line of plain words.
SHAPES = {
    "net.ipv4.tcp_rmem": _TRIPLE, "net.ipv4.tcp_wmem": _TRIPLE, "net.ipv4.tcp_mem": _TRIPLE,
    "net.core.rmem_max": _INT, "net.core.wmem_max": _INT, "net.core.rmem_default": _INT,
    "net.core.wmem_default": _INT, "net.core.netdev_budget": _INT, "net.core.netdev_budget_usecs": _INT,
    "net.core.netdev_max_backlog": _INT, "net.core.busy_poll": _INT, "net.core.busy_read": _INT,
    "net.core.rps_sock_flow_entries": _INT,
    "net.ipv4.tcp_congestion_control": re.compile(r"^[a-z0-9_]{1,16}\Z"),
}
_PLAIN = re.compile(r"^[A-Za-z0-9_ .,:-]*\Z")


def _validate_sysctl(key: str, value: str) -> None:
    sysctl_path(key)
    shape = SHAPES.get(key, _PLAIN)
    if not shape.fullmatch(str(value)):
        raise KnobError(f"sysctl {key}: {value!r} has the wrong form")
    if shape is _TRIPLE and sorted(map(int, str(value).split())) != list(map(int, str(value).split())):
        raise KnobError(f"sysctl {key}: {value!r} must be min <= default <= max")



class CongestionControl(Sysctl):
    """The namespace's default TCP congestion control, loading its module when one exists.

    A child namespace may only pick an algorithm in the global tcp_allowed_congestion_control
    list (EPERM otherwise): config.settings adds it there first (AllowedCongestionControl).
    """

    name = "congestion_control"

    def available_algorithms(self, host: Host) -> list[str]:
        return self.read(host, "net.ipv4.tcp_available_congestion_control").split()

    def validate(self, key: str, value: str) -> None:
        if key != "net.ipv4.tcp_congestion_control":
            raise KnobError(f"congestion_control: key must be net.ipv4.tcp_congestion_control, not {key!r}")
        _validate_sysctl(key, value)

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        if value not in self.available_algorithms(host):
            if host.which("modprobe"):
                host.run(["modprobe", f"tcp_{value}"], check=False)
            if value not in self.available_algorithms(host):
                raise KnobError(f"{host.name}: congestion control {value} is unsupported by this kernel "
                                f"(available: {' '.join(self.available_algorithms(host))})")
        super().write_unverified(host, key, value)


class AllowedCongestionControl(Sysctl):
    """The root namespace's tcp_allowed_congestion_control, which a child namespace's default must be
    in. A value "+NAME ..." adds the algorithms to the list as it is (what a point asks: the point
    cannot know the host's list); any other value is the whole list (what the journal writes back,
    so a restore is exact). The namespace defaults set after it are restored before it, while their
    prior algorithms are still allowed."""

    name = "congestion_allowed"
    KEY = "net.ipv4.tcp_allowed_congestion_control"
    _NAMES = re.compile(r"^\+?[a-z0-9_]{1,16}( [a-z0-9_]{1,16})*\Z")

    def validate(self, key: str, value: str) -> None:
        if key != self.KEY:
            raise KnobError(f"congestion_allowed: key must be {self.KEY}, not {key!r}")
        if not self._NAMES.fullmatch(one_space(value)):
            raise KnobError(f"congestion_allowed: {value!r} is not a list of algorithm names")

    def resolve(self, host: Host, key: str, value: str, prior: str | None = None) -> str:
        if not one_space(value).startswith("+"):
            return value
        now = self.read(host, key).split()
        return " ".join(now + [a for a in one_space(value)[1:].split() if a not in now])

    def write(self, host: Host, key: str, value: str) -> None:
        self.validate(key, value)
        super().write(host, key, self.resolve(host, key, value))
