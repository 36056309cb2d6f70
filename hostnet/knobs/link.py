"""Link settings: MTU and GRO size through iproute2; the GSO/GRO size limit pairs BIG TCP raises
through hostnet's bigtcp tool (rtnetlink)."""
from __future__ import annotations

import json
import weakref

from ..hosts import Host
from ..native import NativeBuildError
from ..native import build
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


# the limits this knob owns; gro_max_size stays GroMaxSize's (iproute2 sets it), bigtcp shows it too
SHOWN = ("tso_max_size", "gso_max_size", "gro_max_size", "gso_ipv4_max_size", "gro_ipv4_max_size")
LIMITS = ("gso", "gro")
_BUILT: "weakref.WeakKeyDictionary[Host, str]" = weakref.WeakKeyDictionary()


def parse_bigtcp(text: str, source: str = "bigtcp") -> dict[str, int | None]:
    """`bigtcp show DEV` -> {attribute: bytes, or None where the kernel reports none (unsupported)}."""
    lines = [ln for ln in text.splitlines() if ln.startswith("bigtcp ")]
    if len(lines) != 1:
        raise KnobError(f"{source}: expected one 'bigtcp ...' line, got {text.strip()[:200]!r}")
    fields = dict(kv.split("=", 1) for kv in lines[0].split()[1:] if "=" in kv)
    out: dict[str, int | None] = {}
    for name in SHOWN:
        value = fields.get(name)
        if value is None or (value != "unsupported" and not is_count(value)):
            raise KnobError(f"{source}: {name} is missing or not a byte count in {lines[0][:200]!r}")
        out[name] = None if value == "unsupported" else int(value)
    return out


class LinkLimits(Knob):
    """A device's GSO (or GRO) packet size limits, the generic one and the IPv4 one, as one value
    "GENERIC/IPV4" in bytes, read and written together in one rtnetlink message by hostnet's
    bigtcp tool (native/bigtcp.c; iproute2 6.1 can neither show nor set the IPv4 ones). BIG TCP
    (packets above 64 KB; Linux 5.19 for IPv6, 6.3 for IPv4) needs them raised, up to the driver's
    tso_max_size. One knob for the pair because the kernel couples them: a generic limit of 64 KB or
    less also sets the IPv4 one, so two knobs restored one after the other could not put back a host
    whose IPv4 limit was raised; the kernel applies one message's generic limit first, then the
    IPv4 one, which gives exactly the pair asked. A kernel without the IPv4 limits is named."""

    scope = "device"

    def __init__(self, kind: str):
        if kind not in LIMITS:
            raise ValueError(f"unknown limits {kind!r}; one of {', '.join(LIMITS)}")
        self.kind = kind
        self.attrs = (f"{kind}_max_size", f"{kind}_ipv4_max_size")
        self.name = f"link.{kind}_limits"

    def _tool(self, host: Host) -> str:
        if host not in _BUILT:
            try:
                _BUILT[host] = build.ensure("bigtcp", host)
            except NativeBuildError as exc:
                raise KnobError(str(exc)) from exc
        return _BUILT[host]

    def sizes(self, host: Host, key: str) -> dict[str, int | None]:
        return parse_bigtcp(host.run([self._tool(host), "show", key]).stdout, f"{host.name}: bigtcp show {key}")

    def read(self, host: Host, key: str) -> str:
        sizes = self.sizes(host, key)
        missing = [a for a in self.attrs if sizes[a] is None]
        if missing:
            raise KnobError(f"{host.name}: {key} reports no {', '.join(missing)} (BIG TCP for IPv4 needs Linux 6.3, "
                            f"for IPv6 5.19)")
        return "/".join(str(sizes[a]) for a in self.attrs)

    def _pair(self, value: str) -> tuple[int, int]:
        parts = str(value).split("/")
        if len(parts) != 2 or not all(is_count(p) and int(p) <= 524280 for p in parts):
            # 0 too: the IPv4 GRO limit reads 0 after gro_max_size 0 (the napi-thread path's GRO off)
            raise KnobError(f"{self.name}: {value!r} is not GENERIC/IPV4, two byte counts from 0 to 524280")
        return int(parts[0]), int(parts[1])

    def validate(self, key: str, value: str) -> None:
        self._pair(value)

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        pair = self._pair(value)
        sizes = self.sizes(host, key)
        if any(sizes[a] is None for a in self.attrs):
            raise KnobError(f"{host.name}: {key} reports no {self.attrs[1]}: this kernel has no BIG TCP for it")
        if sizes["tso_max_size"] is not None and max(pair) > sizes["tso_max_size"]:
            raise KnobError(f"{host.name}: {key} takes at most tso_max_size {sizes['tso_max_size']} bytes, "
                            f"not {max(pair)} (the driver's limit)")
        host.run([self._tool(host), "set", key, self.attrs[0], str(pair[0]), self.attrs[1], str(pair[1])])
