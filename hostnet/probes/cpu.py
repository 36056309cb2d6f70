"""Snapshots of a kernel file at the window's edges: per-CPU /proc/stat (user, system, softirq,
idle...) and, for the counters probe, /proc/net/softnet_stat."""
from __future__ import annotations

import time

from ..hosts import Host


class FileSnapshotProbe:
    path = ""
    prefix = ""

    @property
    def name(self) -> str:
        return self.prefix

    def start(self, host: Host) -> None:
        self._before = host.read_text(self.path)

    def stop(self, host: Host) -> dict[str, str]:
        return {f"{self.prefix}_before.txt": self._before, f"{self.prefix}_after.txt": host.read_text(self.path)}


class ProcStatProbe(FileSnapshotProbe):
    """Also records when each snapshot was read (controller monotonic clock, the read's midpoint):
    busy time is then wall time minus idle time, which NOHZ kernels measure exactly, instead of
    the tick-sampled busy fields (docs/measurement.md, "CPU time accounting")."""
    path, prefix = "/proc/stat", "proc_stat"

    def _read(self, host: Host) -> tuple[str, float]:
        t0 = time.monotonic()
        text = host.read_text(self.path)
        return text, (t0 + time.monotonic()) / 2

    def start(self, host: Host) -> None:
        self._before, self._t_before = self._read(host)

    def stop(self, host: Host) -> dict[str, str]:
        after, t_after = self._read(host)
        return {f"{self.prefix}_before.txt": self._before, f"{self.prefix}_after.txt": after,
                f"{self.prefix}_monotonic_s.txt": f"{self._t_before:.6f}\n{t_after:.6f}\n"}
