"""Loss and drop counters before/after the window, and cache events where perf has them.

Per endpoint (its network namespace): /proc/net/snmp, /proc/net/netstat, `ip -s -j link` and
`ethtool -S` of its data interface. Per machine: /proc/net/softnet_stat (global).
Each endpoint snapshot also records when /proc/net/snmp was read (snmp_monotonic_s.txt, the
controller's monotonic clock): the snapshots bracket the window, so rates divide by this interval.
"""
from __future__ import annotations

import time

from ..hosts import Host
from .background import BackgroundCommandProbe
from .cpu import FileSnapshotProbe

CACHE_EVENTS = ("cache-references", "cache-misses", "LLC-loads", "LLC-load-misses")


class EndpointCounterProbe:
    name = "counters"

    def __init__(self, iface: str):
        self.iface = iface

    def _snap(self, host: Host) -> dict[str, str]:
        eth = host.run(["ethtool", "-S", self.iface], check=False)
        t0 = time.monotonic()
        snmp = host.read_text("/proc/net/snmp")
        t = (t0 + time.monotonic()) / 2  # the read's midpoint: when the counters were taken, at best
        return {"snmp.txt": snmp, "snmp_monotonic_s.txt": f"{t:.6f}\n",
                "netstat.txt": host.read_text("/proc/net/netstat"),
                "link.json": host.run(["ip", "-s", "-j", "link", "show", "dev", self.iface]).stdout,
                "ethtool_S.txt": eth.stdout if eth.returncode == 0 else ""}

    def start(self, host: Host) -> None:
        self._before = self._snap(host)

    def stop(self, host: Host) -> dict[str, str]:
        after = self._snap(host)
        return {**{f"before.{k}": v for k, v in self._before.items()}, **{f"after.{k}": v for k, v in after.items()}}


class SoftnetProbe(FileSnapshotProbe):
    path, prefix = "/proc/net/softnet_stat", "softnet"


class InterruptsProbe(FileSnapshotProbe):
    """Interrupts per CPU over the window: RES and CAL count the IPIs a receive path sends."""
    path, prefix = "/proc/interrupts", "interrupts"


class CacheProbe(BackgroundCommandProbe):
    """perf stat of cache events on every CPU; '<not supported>' (no PMU) is kept as such."""

    name, output, stream, grace = "cache", "perf_stat_cache.txt", "stderr", 10.0
    argv = ["perf", "stat", "-a", "-A", "-x,", "-e", ",".join(CACHE_EVENTS)]
