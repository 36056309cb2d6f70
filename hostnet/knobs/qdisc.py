"""A device's root qdisc. hostnet sets only `pfifo limit N`: on veth (noqueue by default) it
gives the sender backpressure when the peer's NAPI thread lags, instead of drops from the
256-slot ring between them. Any other value is put back by deleting hostnet's qdisc, which
returns the device's default."""
from __future__ import annotations

import json
import re

from ..hosts import Host
from .base import Knob, KnobError, is_count

_IFACE = re.compile(r"[A-Za-z0-9_.-]{1,15}")
_PFIFO = re.compile(r"pfifo limit ([0-9]+)")


def parse_root_qdisc(tc_json: str, iface: str) -> str:
    """`tc -j qdisc show dev IFACE` -> "pfifo limit N" for a pfifo, else the root qdisc's kind."""
    for q in json.loads(tc_json or "[]"):
        if q.get("root"):
            if q.get("kind") == "pfifo":
                return f"pfifo limit {q.get('options', {}).get('limit')}"
            return str(q.get("kind"))
    raise KnobError(f"tc shows no root qdisc on {iface}")


class RootQdisc(Knob):
    name = "qdisc"
    scope = "device"

    def _iface(self, key: str) -> str:
        if not _IFACE.fullmatch(key):
            raise KnobError(f"qdisc: not an interface name: {key!r}")
        return key

    def read(self, host: Host, key: str) -> str:
        return parse_root_qdisc(host.run(["tc", "-j", "qdisc", "show", "dev", self._iface(key)]).stdout, key)

    def validate(self, key: str, value: str) -> None:
        self._iface(key)
        if not re.fullmatch(r"[a-z_]+", str(value)) and not _PFIFO.fullmatch(str(value)):
            raise KnobError(f"qdisc: value must be 'pfifo limit N' or a qdisc kind to return to, not {value!r}")

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        if self.read(host, key) == value:
            return
        m = _PFIFO.fullmatch(str(value))
        if m and is_count(m.group(1)):
            host.run(["tc", "qdisc", "replace", "dev", key, "root", "pfifo", "limit", m.group(1)])
        else:  # back to the device's default (noqueue on veth, mq/pfifo_fast on a NIC)
            host.run(["tc", "qdisc", "del", "dev", key, "root"])
