"""A probe that is one command running over the window, stopped with SIGINT, its output kept."""
from __future__ import annotations

import signal

from ..hosts import Host


class BackgroundCommandProbe:
    """Subclasses set name, argv, output (the file it becomes), stream ("stdout" or "stderr": where
    the tool prints its summary on SIGINT) and grace (seconds to wait for it after SIGINT)."""

    name = ""
    argv: list[str] = []
    output = ""
    stream = "stdout"
    grace = 5.0
    pids: list[int] = []  # processes this probe started: not foreign load

    def start(self, host: Host) -> None:
        self._proc = host.start(list(self.argv))
        self.pids = [self._proc.pid]

    def stop(self, host: Host) -> dict[str, str]:
        try:
            self._proc.stop(signal.SIGINT, grace=self.grace)
            return {self.output: self._proc.stdout() if self.stream == "stdout" else self._proc.stderr()}
        finally:
            self._proc.close()
