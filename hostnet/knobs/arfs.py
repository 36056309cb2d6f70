"""aRFS pieces a NIC needs beyond RFS: ntuple filter rules (created by hostnet, tracked, deleted).

Key: "IFACE/LOC" (the rule's location). Value: a rule spec such as
"flow-type tcp4 dst-ip 198.18.0.2 dst-port 5201 action 1", or "absent". The journal's prior of a
rule hostnet creates is "absent", so restore deletes it; a rule that was there before is read back
as its full spec, so restore re-creates it as it was.
"""
from __future__ import annotations

import ipaddress
import re

from ..hosts import Host
from .base import is_count, Knob, KnobError

_KEY = re.compile(r"^([A-Za-z0-9_.-]{1,15})/([0-9]+)\Z")
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


ORDER = tuple(_FIELDS)
_RULE_TYPES = {"TCP over IPv4": "tcp4", "UDP over IPv4": "udp4", "TCP over IPv6": "tcp6", "UDP over IPv6": "udp6"}
_ADDR = {"Src IP addr": "src-ip", "Dest IP addr": "dst-ip"}
_PORT = {"Src port": "src-port", "Dest port": "dst-port"}


def canonical(spec: str) -> str:
    """A spec with its fields in one order, so a read-back compares equal to what was written."""
    tokens = parse_spec(spec)
    fields = dict(zip(tokens[::2], tokens[1::2], strict=True))
    return " ".join(f"{k} {fields[k]}" for k in ORDER if k in fields)


def _mask_matches(mask: str, bits: int) -> bool:
    """ethtool prints masks inverted: 0 = the field is matched, all ones = ignored; else unsupported."""
    value = int(ipaddress.ip_address(mask)) if ("." in mask or ":" in mask) else int(mask, 16)
    if value not in (0, (1 << bits) - 1):
        raise ValueError(f"partial mask {mask}")
    return value == 0


def parse_rule(text: str) -> str:
    """The first rule `ethtool -n IFACE [rule LOC]` prints -> its spec, the form NtupleRule writes.
    A rule with anything a spec cannot say (TOS, VLAN, user-defined data, partial masks, RSS
    contexts, other actions) raises KnobError: hostnet could not put it back as it was."""
    fields: dict[str, str] = {}
    started = False
    for line in text.splitlines():
        name, _, rest = line.strip().partition(": ")
        if name == "Filter":
            if started:
                break
            started = True
            continue
        if not started or not name:
            continue
        words = rest.split()
        try:
            if name == "Rule Type" and rest in _RULE_TYPES:
                fields["flow-type"] = _RULE_TYPES[rest]
            elif name in _ADDR and len(words) == 3 and words[1] == "mask:":
                if _mask_matches(words[2], ipaddress.ip_address(words[0]).max_prefixlen):
                    fields[_ADDR[name]] = words[0]
            elif name in _PORT and len(words) == 3 and words[1] == "mask:":
                if _mask_matches(words[2], 16):
                    fields[_PORT[name]] = words[0]
            elif name in ("TOS", "Traffic Class") and len(words) == 3 and not _mask_matches(words[2], 8):
                pass  # ignored: every bit masked
            elif name == "Action" and re.fullmatch(r"Direct to queue [0-9]+", rest):
                fields["action"] = words[-1]
            elif name == "Action" and rest == "Drop":
                fields["action"] = "-1"
            else:
                raise ValueError(line.strip())
        except ValueError as exc:
            raise KnobError(f"ntuple: an existing rule has what hostnet cannot re-create ({exc}); "
                            f"hostnet leaves that location alone") from exc
    if "flow-type" not in fields or "action" not in fields:
        raise KnobError(f"ntuple: no rule type or action in {text.strip()[:120]!r}")
    return canonical(" ".join(f"{k} {v}" for k, v in fields.items()))


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
        return parse_rule(res.stdout) if res.returncode == 0 and "Filter:" in res.stdout else "absent"

    def normalize(self, value: str) -> str:
        value = str(value).strip()
        return value if value == "absent" else canonical(value)

    def validate(self, key: str, value: str) -> None:
        self._key(key)
        if value != "absent":
            parse_spec(value)

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        iface, loc = self._key(key)
        now = self.read(host, key)
        if now == self.normalize(value):  # restored already (a second restore changes nothing)
            return
        if now != "absent":
            host.run(["ethtool", "-N", iface, "delete", loc])
        if value != "absent":
            # ethtool 6.1 exits 0 when a driver without ntuple filters refuses a rule placed with loc
            # (e1000e: "rmgr: Cannot insert RX class rule: Operation not supported"): its words decide
            res = host.run(["ethtool", "-N", iface, *parse_spec(value), "loc", loc], check=False)
            said = (res.stderr or "").strip()
            if res.returncode != 0 or "Cannot" in said:
                raise KnobError(f"{host.name}: {iface} refused ntuple rule {value!r} at {loc}: "
                                f"{said or res.stdout.strip() or f'exit {res.returncode}'}")
