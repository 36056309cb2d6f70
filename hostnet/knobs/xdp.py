"""A native XDP program on a device: hostnet attaches only its own pass-everything program
(hostnet/native/xdp_pass.c), whose one effect is to put a veth device in NAPI mode with GRO off
(the receive path "napi-thread" for steps without GRO). It never replaces a program it did not
attach."""
from __future__ import annotations

import json
import re

from ..hosts import Host
from ..native import build
from .base import Knob, KnobError

PROGRAM_NAME = "hostnet_pass"  # the function name in xdp_pass.c, as the kernel lists it
SECTION = "xdp.frags"  # multi-buffer aware: veth takes it at MTU 9000
_IFACE = re.compile(r"[A-Za-z0-9_.-]{1,15}")


def parse_xdp(ip_json: str, iface: str) -> str:
    """`ip -d -j link show dev IFACE` -> "off", "pass" (hostnet's program, native mode) or
    "foreign:<mode>:<prog id>" (anything else attached)."""
    links = json.loads(ip_json or "[]")
    if not links:
        raise KnobError(f"ip link shows no device {iface}")
    xdp = links[0].get("xdp")
    if not xdp:
        return "off"
    progs = xdp.get("attached") or [xdp]
    names = [(a.get("mode"), (a.get("prog") or {}).get("name"), (a.get("prog") or {}).get("id")) for a in progs]
    if len(names) == 1 and names[0][0] == 1 and names[0][1] == PROGRAM_NAME:
        return "pass"
    mode, _, prog_id = names[0]
    return f"foreign:{mode}:{prog_id}"


class XdpProgram(Knob):
    """Key IFACE; value "pass" (hostnet's XDP_PASS program in driver mode) or "off"."""

    name = "xdp"
    scope = "device"

    def read(self, host: Host, key: str) -> str:
        return parse_xdp(host.run(["ip", "-d", "-j", "link", "show", "dev", self._iface(key)]).stdout, key)

    def _iface(self, key: str) -> str:
        if not _IFACE.fullmatch(key):
            raise KnobError(f"xdp: not an interface name: {key!r}")
        return key

    def validate(self, key: str, value: str) -> None:
        self._iface(key)
        if value not in ("pass", "off"):
            raise KnobError(f"xdp: value must be pass or off, not {value!r}")

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        now = self.read(host, key)
        if now.startswith("foreign"):
            raise KnobError(f"{host.name}: {key} runs an XDP program hostnet did not attach ({now}); "
                            f"hostnet leaves it alone")
        if now == value:
            return
        if value == "off":
            host.run(["ip", "link", "set", "dev", key, "xdpdrv", "off"])
            return
        host.run(["ip", "link", "set", "dev", key, "xdpdrv", "obj", build.ensure("xdp_pass", host), "sec", SECTION])
