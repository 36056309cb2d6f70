"""Load fingerprint: CPU time of every process at the window's edges.

Analysis subtracts the processes that are part of the experiment, so a run can be
flagged when foreign load (other users of a shared machine) was high.
"""
from __future__ import annotations

from ..hosts import Host

# A fixed script, no input is interpolated: the glob is expanded by the remote shell.
_SNAPSHOT = ["sh", "-c", "cat /proc/[0-9]*/stat 2>/dev/null; true"]


class LoadProbe:
    name = "load"

    def arm(self, host: Host) -> None:
        """The clock tick rate, read before the window: one round trip less at its edges."""
        self._clk_tck = host.run(["getconf", "CLK_TCK"]).stdout

    def start(self, host: Host) -> None:
        if not hasattr(self, "_clk_tck"):
            self.arm(host)
        self._before = host.run(_SNAPSHOT).stdout

    def stop(self, host: Host) -> dict[str, str]:
        return {"pids_before.txt": self._before, "pids_after.txt": host.run(_SNAPSHOT).stdout,
                "clk_tck.txt": self._clk_tck}
