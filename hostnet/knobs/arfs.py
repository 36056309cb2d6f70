"""aRFS pieces a NIC needs beyond RFS: ntuple filter rules (created by hostnet, tracked, deleted).

Key: "IFACE/LOC" (the rule's location). Value: a rule spec such as
"flow-type tcp4 dst-ip 198.18.0.2 dst-port 5201 action 1", or "absent". The journal's prior of a
rule hostnet creates is "absent", so restore deletes it.
"""
from __future__ import annotations

import ipaddress
import re

from ..hosts import Host
from .base import is_count, Knob, KnobError

_KEY = re.compile(r"^([A-Za-z0-9_.-]{1,15})/([0-9]+)$")
_FIELDS = {
    "flow-type": lambda v: v in ("tcp4", "udp4", "tcp6", "udp6"),
    "src-ip": lambda v: bool(ipaddress.ip_address(v)),
    "dst-ip": lambda v: bool(ipaddress.ip_address(v)),
    "src-port": lambda v: is_count(v) and int(v) < 65536,
    "dst-port": lambda v: is_count(v) and int(v) < 65536,
    "action": lambda v: re.fullmatch(r"-?[0-9]+", v) is not None,
}


def parse_spec(spec: str) -> list[str]:
    """Validate a rule spec; returns its argv tokens."""
    tokens = spec.split()
    if len(tokens) % 2 or not tokens or tokens[0] != "flow-type":
        raise KnobError(f"ntuple: spec must start with flow-type and be key value pairs: {spec!r}")
    for k, v in zip(tokens[::2], tokens[1::2], strict=True):
        try:
            ok = k in _FIELDS and _FIELDS[k](v)
        except ValueError:
            ok = False
        if not ok:
            raise KnobError(f"ntuple: bad field {k} {v!r}")
    return tokens


class NtupleRule(Knob):
    name = "ntuple_rule"
    scope = "device"

    def _key(self, key: str) -> tuple[str, str]:
        m = _KEY.match(key)
        if not m:
            raise KnobError(f"ntuple: key must look like IFACE/LOC, not {key!r}")
        return m.group(1), m.group(2)

    def read(self, host: Host, key: str) -> str:
        iface, loc = self._key(key)
        res = host.run(["ethtool", "-n", iface, "rule", loc], check=False)
        return "present" if res.returncode == 0 and "Filter:" in res.stdout else "absent"

    def normalize(self, value: str) -> str:
        return "absent" if value.strip() == "absent" else "present"

    def validate(self, key: str, value: str) -> None:
        self._key(key)
        if value != "absent":
            parse_spec(value)

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        iface, loc = self._key(key)
        if value == "absent":
            if self.read(host, key) == "present":
                host.run(["ethtool", "-N", iface, "delete", loc])
            return
        host.run(["ethtool", "-N", iface, *parse_spec(value), "loc", loc])
