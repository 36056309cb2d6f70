"""Receive steering through sysfs: RPS CPU masks and RFS flow counts per rx queue.

Keys are "IFACE/rx-N". On veth these are the software stand-in for the NIC's
RSS/aRFS steering the paper used.
"""
from __future__ import annotations

import re

from ..hosts import Host
from .base import is_count, Knob, KnobError



def cpu_mask(cpus) -> str:
    """CPU list -> the hex mask sysfs expects ([1] -> "2")."""
    mask = 0
    for c in cpus:
        mask |= 1 << int(c)
    return format(mask, "x")


class _QueueFile(Knob):
    """A file per queue under /sys/class/net/IFACE/queues/; key "IFACE/rx-N" (or tx-N)."""

    scope = "device"
    filename = ""
    direction = "rx"

    def path(self, key: str) -> str:
        if not re.fullmatch(rf"[A-Za-z0-9_.-]{{1,15}}/{self.direction}-[0-9]+", key):
            raise KnobError(f"{self.name}: key must look like IFACE/{self.direction}-N, not {key!r}")
        iface, queue = key.split("/")
        return f"/sys/class/net/{iface}/queues/{queue}/{self.filename}"

    def read(self, host: Host, key: str) -> str:
        return host.read_text(self.path(key)).strip()

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        host.write_text(self.path(key), f"{value}\n")


class RpsCpus(_QueueFile):
    name = "rps_cpus"
    filename = "rps_cpus"

    def normalize(self, value: str) -> str:
        return format(int(str(value).replace(",", "").strip() or "0", 16), "x")

    def validate(self, key: str, value: str) -> None:
        if not re.fullmatch(r"[0-9a-fA-F,]+", str(value)):
            raise KnobError(f"rps_cpus: {value!r} is not a hex CPU mask")


class RpsFlowCnt(_QueueFile):
    name = "rps_flow_cnt"
    filename = "rps_flow_cnt"

    def validate(self, key: str, value: str) -> None:
        if not is_count(str(value)):
            raise KnobError(f"rps_flow_cnt: {value!r} is not a count")
