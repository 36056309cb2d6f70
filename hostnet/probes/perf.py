"""perf record -a -g over the window, reported per CPU, command and symbol.

Without a hardware PMU (as in most VMs) perf samples on cpu-clock, a timer; the
sampling event is recorded so analysis can state that caveat.
"""
from __future__ import annotations

import signal
import time

from ..hosts import Host, HostError
from ..parsers.perf_report import PERF_REPORT_ARGS
from ..parsers import ParseError
from ..parsers.perf_script import fold, parse_perf_script, write_folded

DEFAULT_FREQ_HZ = 999


def record_argv(output: str, freq_hz: int = DEFAULT_FREQ_HZ, event: str = "cpu-clock") -> list[str]:
    return ["perf", "record", "-a", "-g", "-e", event, "-F", str(int(freq_hz)), "-o", output, "--quiet"]


class PerfProbe:
    name = "perf"
    pids: list[int] = []  # processes this probe started: not foreign load

    def __init__(self, freq_hz: int = DEFAULT_FREQ_HZ, event: str = "cpu-clock", keep_data: bool = False):
        if not 1 <= int(freq_hz) <= 10000:
            raise ValueError(f"perf frequency {freq_hz} Hz is out of 1..10000")
        self.freq_hz, self.event, self.keep_data = int(freq_hz), event, keep_data

    def start(self, host: Host) -> None:
        self._dir = host.run(["mktemp", "-d", "-t", "hostnet-perf-XXXXXX"]).stdout.strip()
        self._data = f"{self._dir}/perf.data"
        self._proc = host.start(record_argv(self._data, self.freq_hz, self.event))
        self.pids = [self._proc.pid]
        time.sleep(0.3)  # perf needs a moment to open its events on every CPU
        if self._proc.poll() is not None:
            raise HostError(f"{host.name}: perf record exited at start: {self._proc.stderr().strip()[-300:]}")

    def stop(self, host: Host) -> dict[str, str]:
        try:
            self._proc.stop(signal.SIGINT, grace=30)
            err = self._proc.stderr()
            report = host.run(["perf", *PERF_REPORT_ARGS, "-i", self._data], check=False, timeout=300)
            script = host.run(["perf", "script", "-F", "comm,tid,cpu,event,ip,sym", "-i", self._data],
                              check=False, timeout=300)
            # folded stacks: a few hundred KB instead of the script's megabytes, enough to
            # re-classify, re-attribute or draw a flame graph later
            files = {"perf_report.txt": report.stdout, "perf_record.stderr.txt": err,
                     "perf_report.stderr.txt": report.stderr}
            try:
                files["perf_folded.txt"] = write_folded(fold(parse_perf_script(script.stdout.splitlines(),
                                                                                "perf script")))
            except ParseError as exc:  # the leaf breakdown stands without the stacks; say why
                files["perf_folded.error.txt"] = str(exc)
            if self.keep_data:
                files["perf.data.path"] = self._data
            return files
        finally:
            self._proc.close()
            if not self.keep_data:
                host.run(["rm", "-rf", "--", self._dir], check=False)


