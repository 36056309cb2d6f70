"""perf record -a -g over the window, reported per CPU, command and symbol.

Without a hardware PMU (as in most VMs) perf samples on cpu-clock, a timer; the
sampling event is recorded so analysis can state that caveat.
"""
from __future__ import annotations

import signal
import time

from ..hosts import Host, HostError
from ..parsers.perf_report import PERF_HEADER_ARGS, PERF_REPORT_ARGS
from ..parsers import ParseError
from ..parsers.perf_script import fold, fold_chunks, fold_text_lines, parse_perf_script, write_folded

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
            files = {**report_files(host, self._data), "perf_record.stderr.txt": self._proc.stderr()}
            if self.keep_data:
                files["perf.data.path"] = self._data
            return files
        finally:
            self._proc.close()
            if not self.keep_data:
                host.run(["rm", "-rf", "--", self._dir], check=False)


SCRIPT_ARGS = ["script", "-F", "comm,tid,cpu,event,ip,sym"]


def report_files(host: Host, data: str) -> dict[str, str]:
    """perf.data -> the report and folded stacks a run keeps (bench/ times this same path).

    perf report runs in the background (its output goes to a file) while perf script's output
    streams through the folding: on two cores the three overlap, and no stage holds perf script's
    output (~530 bytes per sample) in memory. The files are the same as those of
    `report_files_sequential`, the earlier path, which tests compare against."""
    report = host.start(["perf", *PERF_REPORT_ARGS, "-i", data])
    try:
        # folded stacks: a few hundred KB instead of the script's megabytes, enough to
        # re-classify, re-attribute or draw a flame graph later
        script = ["perf", *SCRIPT_ARGS, "-i", data]
        try:
            folded = {"perf_folded.txt": write_folded(host.stream(script, fold_chunks, check=False, timeout=300)[1])}
        except ParseError:  # the leaf breakdown stands without the stacks; say why, naming the line
            folded = _folded_line_by_line(host, script)
        report.wait(timeout=300)
        return {"perf_report.txt": report.stdout(), "perf_report.stderr.txt": report.stderr(),
                **header_file(host, data), **folded}
    finally:
        report.close()


def header_file(host: Host, data: str) -> dict[str, str]:
    """The span perf sampled (perf report --header-only): sampling coverage divides by it."""
    return {"perf_header.txt": host.run(["perf", *PERF_HEADER_ARGS, "-i", data], check=False, timeout=60).stdout}


def _folded_line_by_line(host: Host, script: list[str]) -> dict[str, str]:
    try:
        return {"perf_folded.txt": write_folded(host.stream(script, fold_text_lines, check=False, timeout=300)[1])}
    except ParseError as exc:
        return {"perf_folded.error.txt": str(exc)}


def report_files_sequential(host: Host, data: str) -> dict[str, str]:
    """The earlier path (perf report, then perf script held whole and folded line by line): the
    reference the equivalence tests and bench/ compare report_files with."""
    report = host.run(["perf", *PERF_REPORT_ARGS, "-i", data], check=False, timeout=300)
    script = host.run(["perf", *SCRIPT_ARGS, "-i", data], check=False, timeout=300)
    files = {"perf_report.txt": report.stdout, "perf_report.stderr.txt": report.stderr, **header_file(host, data)}
    try:
        files["perf_folded.txt"] = write_folded(fold(parse_perf_script(script.stdout.splitlines(), "perf script")))
    except ParseError as exc:
        files["perf_folded.error.txt"] = str(exc)
    return files
