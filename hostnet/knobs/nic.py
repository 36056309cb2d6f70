"""NIC queue settings through ethtool: ring sizes (-g/-G), channel counts (-l/-L) and interrupt
coalescing (-c/-C).

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


class _EthtoolField(Knob):
    """One field of what `ethtool SHOW_FLAG IFACE` prints, set with `ethtool SET_FLAG IFACE FIELD N`."""
    scope = "device"
    show_flag = set_flag = ""
    fields: tuple[str, ...] = ()
    what = ""

    def __init__(self, field: str):
        if field not in self.fields:
            raise KnobError(f"{self.what}: field must be one of {self.fields}, not {field!r}")
        self.field = field
        self.name = f"{self.what}.{field}"

    def _show(self, host: Host, iface: str) -> str:
        try:
            res = host.run(["ethtool", self.show_flag, iface], check=False)
        except HostError as exc:
            raise KnobError(str(exc)) from exc
        if res.returncode != 0:
            raise KnobError(f"{host.name}: {iface} does not support ethtool {self.show_flag} "
                            f"({(res.stderr or res.stdout).strip() or 'no output'})")
        return res.stdout


class _EthtoolQueues(_EthtoolField):
    def _sections(self, host: Host, iface: str) -> dict:
        return parse_ethtool_sections(self._show(host, iface))

    def read(self, host: Host, key: str) -> str:
        cur = self._sections(host, key).get("current", {})
        if _count(cur.get(self.field, "")) is None:  # absent or "n/a"
            raise KnobError(f"{host.name}: {key} has no {self.what} {self.field} "
                            f"({cur.get(self.field, 'not reported')})")
        return cur[self.field]

    def validate(self, key: str, value: str) -> None:
        if _count(str(value)) is None:
            raise KnobError(f"{self.name}: {value!r} is not a count")

    def limit(self, host: Host, key: str) -> int | None:
        """The driver's maximum for this field (None where it reports none)."""
        return _count(self._sections(host, key).get("max", {}).get(self.field, ""))

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        limit = self.limit(host, key)
        if limit is not None and int(value) > limit:
            raise KnobError(f"{host.name}: {key} allows at most {limit} {self.what} {self.field}, not {value}")
        host.run(["ethtool", self.set_flag, key, self.field, str(int(value))])


class RingSize(_EthtoolQueues):
    """Descriptors per rx/tx ring (the paper's Fig. 3(e) sweeps the rx ring)."""
    show_flag, set_flag, fields, what = "-g", "-G", ("rx", "tx", "rx-mini", "rx-jumbo"), "ring"


class Channels(_EthtoolQueues):
    """Queue counts: rx, tx, other, combined."""
    show_flag, set_flag, fields, what = "-l", "-L", ("rx", "tx", "other", "combined"), "channels"


def parse_coalesce(text: str) -> dict[str, str]:
    """`ethtool -c IFACE` output -> {field: value} (rx-usecs, tx-frames, ..., adaptive-rx,
    adaptive-tx); a field the driver does not have reads "n/a"."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        low = line.strip().lower()
        if low.startswith("adaptive rx:"):  # "Adaptive RX: on  TX: off": two fields on one line
            words = low.replace(":", " ").split()
            out["adaptive-rx"], out["adaptive-tx"] = words[2], words[4] if len(words) > 4 else "n/a"
        elif ":" in low and not low.startswith("coalesce parameters"):
            k, _, v = low.partition(":")
            if k.strip() and " " not in k.strip():
                out[k.strip()] = v.strip()
    return out


class Coalesce(_EthtoolField):
    """Interrupt coalescing (`ethtool -c/-C`): how long (usecs) or how many frames (frames) a NIC
    waits before it interrupts. Drivers refuse values they cannot program (e1000e: rx-usecs 4-9)
    and may round others; write() reads back, so a rounded value is an error naming both."""

    show_flag, set_flag, what = "-c", "-C", "coalesce"
    fields = ("rx-usecs", "rx-frames", "tx-usecs", "tx-frames", "adaptive-rx", "adaptive-tx")

    def read(self, host: Host, key: str) -> str:
        value = parse_coalesce(self._show(host, key)).get(self.field, "n/a")
        if value in ("n/a", ""):
            raise KnobError(f"{host.name}: {key} has no coalescing setting {self.field} (n/a)")
        return value

    def validate(self, key: str, value: str) -> None:
        switch = self.field.startswith("adaptive")
        if not (value in ("on", "off") if switch else _count(str(value)) is not None):
            raise KnobError(f"{self.name}: {value!r} is not {'on or off' if switch else 'a count'}")

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        host.run(["ethtool", self.set_flag, key, self.field, str(value)])
