"""Snapshots of a kernel file at the window's edges: per-CPU /proc/stat (user, system, softirq,
idle...) and, for the counters probe, /proc/net/softnet_stat."""
from __future__ import annotations

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
    path, prefix = "/proc/stat", "proc_stat"
