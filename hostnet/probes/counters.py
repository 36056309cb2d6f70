"""Loss and drop counters before/after the window, and cache events where perf has them.

Per endpoint (its network namespace): /proc/net/snmp, /proc/net/netstat, `ip -s -j link` and
`ethtool -S` of its data interface. Per machine: /proc/net/softnet_stat (global).
Each endpoint snapshot is one command (_SNAPSHOT_SH) and records when it ran (snmp_monotonic_s.txt,
the controller's monotonic clock at the command's midpoint): the snapshots bracket the window, so
rates divide by this interval.
"""
from __future__ import annotations

import time
import uuid

from ..hosts import Host, HostError
from .perf import ControlledPerf
from .cpu import FileSnapshotProbe

CACHE_EVENTS = ("cache-references", "cache-misses", "LLC-loads", "LLC-load-misses")


# One endpoint snapshot in one command (one SSH round trip instead of four): each section is
# preceded by "<marker> <name>"; $1 the interface, $2 the marker. A failing ethtool leaves its
# section empty (veth and some drivers have no statistics); a failing ip fails the snapshot.
_SNAPSHOT_SH = ('printf "%s ethtool_S\\n" "$2"; ethtool -S "$1" 2>/dev/null || printf "%s failed\\n" "$2"; '
                'printf "%s snmp\\n" "$2"; cat /proc/net/snmp || exit $?; '
                'printf "%s netstat\\n" "$2"; cat /proc/net/netstat || exit $?; '
                'printf "%s link\\n" "$2"; ip -s -j link show dev "$1" || exit $?')


class EndpointCounterProbe:
    name = "counters"

    def __init__(self, iface: str):
        self.iface = iface

    def _snap(self, host: Host) -> dict[str, str]:
        marker = f"--hostnet-{uuid.uuid4().hex}--"
        t0 = time.monotonic()
        out = host.run(["sh", "-c", _SNAPSHOT_SH, "sh", self.iface, marker]).stdout
        t = (t0 + time.monotonic()) / 2  # the command's midpoint: when the counters were taken, at best
        sections = split_sections(out, marker)
        missing = [n for n in ("snmp", "netstat", "link") if n not in sections]
        if missing:
            raise HostError(f"{host.name}: the counter snapshot of {self.iface} printed no {', '.join(missing)}: "
                            f"{out.strip()[-200:]!r}")
        eth = sections.get("ethtool_S", "")
        return {"snmp.txt": sections["snmp"], "snmp_monotonic_s.txt": f"{t:.6f}\n",
                "netstat.txt": sections["netstat"], "link.json": sections["link"],
                "ethtool_S.txt": "" if f"{marker} failed" in eth else eth}

    def start(self, host: Host) -> None:
        self._before = self._snap(host)

    def stop(self, host: Host) -> dict[str, str]:
        after = self._snap(host)
        return {**{f"before.{k}": v for k, v in self._before.items()}, **{f"after.{k}": v for k, v in after.items()}}


def split_sections(text: str, marker: str) -> dict[str, str]:
    """The sections of _SNAPSHOT_SH's output by name; a marker line inside one stays in it."""
    out: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines(keepends=True):
        head = line.rstrip("\n").split(" ", 1)
        if head[0] == marker and len(head) == 2 and head[1] in ("ethtool_S", "snmp", "netstat", "link"):
            name = head[1]
            out[name] = []
        elif name is not None:
            out[name].append(line)
    return {k: "".join(v) for k, v in out.items()}


class SoftnetProbe(FileSnapshotProbe):
    path, prefix = "/proc/net/softnet_stat", "softnet"


class InterruptsProbe(FileSnapshotProbe):
    """Interrupts per CPU over the window: RES and CAL count the IPIs a receive path sends."""
    path, prefix = "/proc/interrupts", "interrupts"


class CacheProbe(ControlledPerf):
    """perf stat of cache events on every CPU, armed before the clients and switched on and off at
    the window's edges like perf record (ControlledPerf); '<not supported>' (no PMU) is kept as such."""

    name, tool = "cache", "perf stat"
    output = "perf_stat_cache.txt"

    def argv(self, ctl: str, ack: str) -> list[str]:
        return ["perf", "stat", "-a", "-A", "-x,", "-e", ",".join(CACHE_EVENTS), "-D", "-1",
                "--control", f"fifo:{ctl},{ack}"]

    def finish(self, host: Host) -> dict[str, str]:
        return {self.output: self._proc.stderr()}
