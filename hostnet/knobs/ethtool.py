"""Offloads through ethtool -k/-K (tso, gso, gro, lro, checksums)."""
from __future__ import annotations

from ..hosts import Host
from .base import Knob, KnobError

# ethtool's short flag name -> the feature name `ethtool -k` prints.
FEATURES = {
    "tso": "tcp-segmentation-offload",
    "gso": "generic-segmentation-offload",
    "gro": "generic-receive-offload",
    "lro": "large-receive-offload",
    "rx": "rx-checksumming",
    "tx": "tx-checksumming",
    "sg": "scatter-gather",
    "ntuple": "ntuple-filters",
}


def parse_features(text: str) -> dict[str, tuple[bool, bool]]:
    """`ethtool -k IFACE` output -> {feature: (on, fixed)}."""
    out: dict[str, tuple[bool, bool]] = {}
    for line in text.splitlines():
        if ":" not in line or line.startswith("Features for"):
            continue
        name, _, rest = line.strip().partition(":")
        words = rest.split()
        if not words or words[0] not in ("on", "off"):
            continue
        out[name] = (words[0] == "on", "[fixed]" in rest)
    return out


class Offload(Knob):
    scope = "device"

    def __init__(self, flag: str):
        if flag not in FEATURES:
            raise KnobError(f"unknown offload {flag!r}; known: {', '.join(FEATURES)}")
        self.flag = flag
        self.name = f"offload.{flag}"

    def _features(self, host: Host, iface: str) -> tuple[bool, bool]:
        feats = parse_features(host.run(["ethtool", "-k", iface]).stdout)
        if FEATURES[self.flag] not in feats:
            raise KnobError(f"{host.name}: {iface} does not report {FEATURES[self.flag]}")
        return feats[FEATURES[self.flag]]

    def available(self, host: Host, key: str) -> tuple[bool, str]:
        ok, why = super().available(host, key)
        if ok and self._features(host, key)[1]:
            return False, f"{self.flag} is fixed on {key} (the driver does not let it change)"
        return ok, why

    def read(self, host: Host, key: str) -> str:
        return "on" if self._features(host, key)[0] else "off"

    def validate(self, key: str, value: str) -> None:
        if value not in ("on", "off"):
            raise KnobError(f"{self.name}: value must be on or off, not {value!r}")

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        on, fixed = self._features(host, key)
        if fixed and (value == "on") != on:
            raise KnobError(f"{host.name}: {self.flag} is fixed {'on' if on else 'off'} on {key}")
        host.run(["ethtool", "-K", key, self.flag, value])
