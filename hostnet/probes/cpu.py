"""Per-CPU /proc/stat snapshots at the edges of the window (user, system, softirq, idle...)."""
from __future__ import annotations

from ..hosts import Host


class ProcStatProbe:
    name = "procstat"

    def start(self, host: Host) -> None:
        self._before = host.read_text("/proc/stat")

    def stop(self, host: Host) -> dict[str, str]:
        return {"proc_stat_before.txt": self._before, "proc_stat_after.txt": host.read_text("/proc/stat")}
