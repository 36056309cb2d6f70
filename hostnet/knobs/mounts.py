"""Mounts hostnet may need for a probe (tracefs for bpftrace), journaled so they are undone."""
from __future__ import annotations

from ..hosts import Host
from .base import Knob, KnobError

FILESYSTEMS = {"/sys/kernel/tracing": "tracefs", "/sys/kernel/debug": "debugfs"}


def mounted(proc_mounts: str, path: str, fstype: str) -> bool:
    return any(len(p) >= 3 and p[1] == path and p[2] == fstype
               for p in (line.split() for line in proc_mounts.splitlines()))


class Mount(Knob):
    """Key: the mount point. Values: "mounted" / "unmounted"."""

    name = "mount"
    scope = "global"

    def _fs(self, key: str) -> str:
        if key not in FILESYSTEMS:
            raise KnobError(f"mount: hostnet only mounts {', '.join(FILESYSTEMS)}, not {key!r}")
        return FILESYSTEMS[key]

    def read(self, host: Host, key: str) -> str:
        return "mounted" if mounted(host.read_text("/proc/mounts"), key, self._fs(key)) else "unmounted"

    def validate(self, key: str, value: str) -> None:
        self._fs(key)
        if value not in ("mounted", "unmounted"):
            raise KnobError(f"mount: value must be mounted or unmounted, not {value!r}")

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        if self.read(host, key) == value:  # a second restore: umount would fail on what is not mounted
            return
        if value == "mounted":
            host.run(["mount", "-t", self._fs(key), "nodev", key])
        else:
            host.run(["umount", key])
