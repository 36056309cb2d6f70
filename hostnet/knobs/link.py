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
