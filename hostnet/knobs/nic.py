"""NIC queue settings through ethtool: ring sizes (-g/-G) and channel counts (-l/-L).

veth has no rings (`ethtool -g` is unsupported) but does have rx/tx channels.
"""
from __future__ import annotations

import re

from ..hosts import Host, HostError
from .base import Knob, KnobError


def parse_ethtool_sections(text: str) -> dict[str, dict[str, str]]:
    """`ethtool -g` / `ethtool -l` output -> {"max": {...}, "current": {...}} (keys lower-case)."""
    out: dict[str, dict[str, str]] = {}
    section = None
    for line in text.splitlines():
        low = line.strip().lower()
        if low.startswith("pre-set maximums"):
            section = out.setdefault("max", {})
        elif low.startswith("current hardware settings"):
            section = out.setdefault("current", {})
        elif section is not None and ":" in line:
            k, _, v = line.partition(":")
            section[k.strip().lower()] = v.strip()
    return out


def _count(value: str) -> int | None:
    return int(value) if re.fullmatch(r"[0-9]+", value or "") else None


class _EthtoolQueues(Knob):
    scope = "device"
    show_flag = set_flag = ""
    fields: tuple[str, ...] = ()
    what = ""

    def __init__(self, field: str):
        if field not in self.fields:
            raise KnobError(f"{self.what}: field must be one of {self.fields}, not {field!r}")
        self.field = field
        self.name = f"{self.what}.{field}"

    def _sections(self, host: Host, iface: str) -> dict:
        try:
            res = host.run(["ethtool", self.show_flag, iface], check=False)
        except HostError as exc:
            raise KnobError(str(exc)) from exc
        if res.returncode != 0:
            raise KnobError(f"{host.name}: {iface} does not support ethtool {self.show_flag} "
                            f"({(res.stderr or res.stdout).strip() or 'no output'})")
        return parse_ethtool_sections(res.stdout)

    def read(self, host: Host, key: str) -> str:
        cur = self._sections(host, key).get("current", {})
        if _count(cur.get(self.field, "")) is None:  # absent or "n/a"
            raise KnobError(f"{host.name}: {key} has no {self.what} {self.field} "
                            f"({cur.get(self.field, 'not reported')})")
        return cur[self.field]

    def validate(self, key: str, value: str) -> None:
        if _count(str(value)) is None:
            raise KnobError(f"{self.name}: {value!r} is not a count")

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        limit = _count(self._sections(host, key).get("max", {}).get(self.field, ""))
        if limit is not None and int(value) > limit:
            raise KnobError(f"{host.name}: {key} allows at most {limit} {self.what} {self.field}, not {value}")
        host.run(["ethtool", self.set_flag, key, self.field, str(int(value))])


class RingSize(_EthtoolQueues):
    """Descriptors per rx/tx ring (the paper's Fig. 3(e) sweeps the rx ring)."""
    show_flag, set_flag, fields, what = "-g", "-G", ("rx", "tx", "rx-mini", "rx-jumbo"), "ring"


class Channels(_EthtoolQueues):
    """Queue counts: rx, tx, other, combined."""
    show_flag, set_flag, fields, what = "-l", "-L", ("rx", "tx", "other", "combined"), "channels"
