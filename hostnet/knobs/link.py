"""Link settings through iproute2 (MTU)."""
from __future__ import annotations

import json

from ..hosts import Host
from .base import is_count, Knob, KnobError


class Mtu(Knob):
    name = "mtu"
    scope = "device"

    def read(self, host: Host, key: str) -> str:
        info = json.loads(host.run(["ip", "-j", "link", "show", "dev", key]).stdout)
        return str(info[0]["mtu"])

    def validate(self, key: str, value: str) -> None:
        if not is_count(str(value)) or not 68 <= int(value) <= 65535:
            raise KnobError(f"mtu: {value!r} is not an MTU between 68 and 65535")

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        host.run(["ip", "link", "set", "dev", key, "mtu", str(value)])


class GroMaxSize(Knob):
    """The largest packet GRO may build on a device (`ip link set dev IFACE gro_max_size N`). 0 stops
    every merge while GRO stays on, so veth keeps NAPI (threaded NAPI needs it) without hostnet's XDP
    program and the copy veth makes for it. The kernel moves gro_ipv4_max_size with it for sizes up
    to 65536; iproute2 6.1 neither shows nor sets that one, so this knob owns gro_max_size alone."""

    name = "gro_max_size"
    scope = "device"

    def read(self, host: Host, key: str) -> str:
        info = json.loads(host.run(["ip", "-d", "-j", "link", "show", "dev", key]).stdout or "[]")
        if not info:
            raise KnobError(f"{host.name}: ip link shows no device {key}")
        if "gro_max_size" not in info[0]:
            raise KnobError(f"{host.name}: {key} reports no gro_max_size (kernel before 5.19 or an older iproute2)")
        return str(info[0]["gro_max_size"])

    def validate(self, key: str, value: str) -> None:
        if not is_count(str(value)) or int(value) > 524280:
            raise KnobError(f"gro_max_size: {value!r} is not a byte count between 0 and 524280")

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        host.run(["ip", "link", "set", "dev", key, "gro_max_size", str(value)])
