"""Loss injection: an nftables table of hostnet's own that randomly drops received TCP packets.

It differs from the paper's kernel patch in two ways, both documented in docs/knobs.md: it runs at
the netfilter prerouting hook (after GRO, so with GRO/TSO on, one drop removes a whole
aggregated skb of many MSS — bursty loss), and it selects traffic by input interface, not by
hard-coded addresses. For per-packet random loss turn TSO/GSO off on the sender.
"""
from __future__ import annotations

import json
import re

from ..hosts import Host, HostError
from .base import Knob, KnobError

TABLE = "hostnet_loss"
SCALE = 1_000_000  # numgen modulus: loss rates down to 1e-6
_IFACE = re.compile(r"^[A-Za-z0-9_.-]{1,15}\Z")


def ruleset(iface: str, rate: float) -> str:
    """nft script (fed on stdin, never through a shell) replacing our table atomically."""
    if not _IFACE.match(iface):
        raise KnobError(f"loss: not an interface name: {iface!r}")
    threshold = round(rate * SCALE)
    return (f"table inet {TABLE}\ndelete table inet {TABLE}\n"
            f"table inet {TABLE} {{\n  counter seen {{ }}\n  counter dropped {{ }}\n"
            f"  chain pre {{\n    type filter hook prerouting priority raw; policy accept;\n"
            f"    iifname \"{iface}\" meta l4proto tcp counter name seen\n"
            f"    iifname \"{iface}\" meta l4proto tcp numgen random mod {SCALE} < {threshold} "
            f"counter name dropped drop\n  }}\n}}\n")


def parse_loss_table(text: str) -> dict:
    """`nft -j list table inet hostnet_loss` -> {"rate", "seen_packets", "dropped_packets"}."""
    doc = json.loads(text)
    out = {"rate": 0.0, "seen_packets": 0, "dropped_packets": 0}
    for item in doc.get("nftables", []):
        if "counter" in item and item["counter"].get("name") in ("seen", "dropped"):
            out[f"{item['counter']['name']}_packets"] = int(item["counter"].get("packets", 0))
        for expr in item.get("rule", {}).get("expr", []):
            match = expr.get("match", {})
            if isinstance(match.get("left"), dict) and "numgen" in match["left"]:
                out["rate"] = int(match["right"]) / int(match["left"]["numgen"]["mod"])
    return out


def _rate(value: str) -> float:
    try:
        rate = float(value)
    except ValueError as exc:
        raise KnobError(f"loss: rate {value!r} is not a number between 0 and 1") from exc
    if not 0.0 <= rate < 1.0:
        raise KnobError(f"loss: rate {rate} is outside [0, 1)")
    return rate


class NftLoss(Knob):
    """Key: the receiver's data interface. Value: drop probability as text ("0" = no table)."""

    name = "loss"
    scope = "device"

    def available(self, host: Host, key: str) -> tuple[bool, str]:
        if not host.which("nft"):
            return False, f"{host.name}: nft is not installed (Debian: nftables)"
        return True, ""

    def counters(self, host: Host) -> dict:
        res = host.run(["nft", "-j", "list", "table", "inet", TABLE], check=False)
        if res.returncode != 0:
            return {"rate": 0.0, "seen_packets": 0, "dropped_packets": 0}
        return parse_loss_table(res.stdout)

    def read(self, host: Host, key: str) -> str:
        try:
            return format(self.counters(host)["rate"], "g")
        except HostError as exc:
            raise KnobError(str(exc)) from exc

    def normalize(self, value: str) -> str:
        return format(round(float(value) * SCALE) / SCALE, "g")

    def validate(self, key: str, value: str) -> None:
        _rate(str(value))
        if not _IFACE.match(key):
            raise KnobError(f"loss: not an interface name: {key!r}")

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        rate = _rate(str(value))
        if rate == 0:
            if host.run(["nft", "list", "table", "inet", TABLE], check=False).returncode == 0:
                host.run(["nft", "delete", "table", "inet", TABLE])
            return
        host.run(["nft", "-f", "-"], input=ruleset(key, rate))
