"""perf record -a -g over the window, reported per CPU, command and symbol.

perf runs from before the clients start, its events switched on through its control FIFO (perf
record --control, -D -1) LEAD_S before the window opens and off after it closes; its samples are
cut to the window by their time stamps (-k CLOCK_REALTIME, then --time), so the window's first
second is not the one perf started sampling in.

Without a hardware PMU (as in most VMs) perf samples on cpu-clock, a timer; the
sampling event is recorded so analysis can state that caveat.
"""
from __future__ import annotations

import signal
import time
from dataclasses import asdict, dataclass

from ..hosts import Host, HostError
from ..hosts.base import make_temp_dir
from ..parsers.perf_report import PERF_HEADER_ARGS, PERF_REPORT_ARGS
from ..parsers import ParseError
from ..parsers.perf_script import fold, fold_chunks, fold_text_lines, parse_perf_script, write_folded

DEFAULT_FREQ_HZ = 999
# How long before the window opens perf record's events go on (at most the warm-up): its first
# samples (ring buffers filling, the reader waking) fall before the window, not in its first second.
LEAD_S = 1.0
# The clock perf stamps samples with: the wall clock, so the window's edges (time.time() here, the
# host's clock offset added for a remote host) select its samples with perf report/script --time.
SAMPLE_CLOCK = "CLOCK_REALTIME"
# A perf control command's round trip waits at most this long for perf's "ack" (perf that died
# leaves its control FIFO without a reader, and the write would block for ever). 60 s, was 10: the
# NIC rehearsal's TCG guests answer slowly under a flow, and `make test-nic` runs with it; a perf
# already dead is caught before the command is sent (_control's poll).
CONTROL_TIMEOUT_S = 60.0
# Sends one command to perf's control FIFO and prints perf's acknowledgement. A fixed script: the
# command and both FIFO paths arrive as positional arguments, never spliced into the text.
CONTROL_SH = 'printf "%s\\n" "$1" > "$2" && head -n 1 "$3"'


def record_argv(output: str, freq_hz: int = DEFAULT_FREQ_HZ, event: str = "cpu-clock") -> list[str]:
    return ["perf", "record", "-a", "-g", "-e", event, "-F", str(int(freq_hz)), "-o", output, "--quiet"]


@dataclass(frozen=True)
class PerfOptions:
    """How perf records, beyond its rate: the levers of its cost that bench/ measures (issue 18).
    call_graph: "fp" (-g, frame pointers: the attributed breakdown needs the chains) or "none"
    (leaf symbols only); mmap_pages: perf's ring buffer per CPU (-m, a power of two; None: perf's
    default, 516 KiB of perf_event_mlock_kb here); data_dir: where perf.data is written (None: the
    host's temporary directory; e.g. /dev/shm for tmpfs); cpus: "all" (-a) or "experiment" (-C with
    the CPUs the point's applications and receive processing use on that machine)."""

    call_graph: str = "fp"
    mmap_pages: int | None = None
    data_dir: str | None = None
    cpus: str = "all"

    def __post_init__(self):
        if self.call_graph not in ("fp", "none"):
            raise ValueError(f"perf call_graph {self.call_graph!r}: fp or none")
        if self.mmap_pages is not None and (self.mmap_pages < 1 or self.mmap_pages & (self.mmap_pages - 1)):
            raise ValueError(f"perf mmap_pages {self.mmap_pages}: a power of two")
        if self.cpus not in ("all", "experiment"):
            raise ValueError(f"perf cpus {self.cpus!r}: all or experiment")

    def describe(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v != getattr(PerfOptions, k)}


def controlled_record_argv(output: str, ctl: str, ack: str, freq_hz: int = DEFAULT_FREQ_HZ,
                           event: str = "cpu-clock", build_ids: bool = False, options: PerfOptions = PerfOptions(),
                           cpus: list[int] | None = None) -> list[str]:
    """perf record armed with its events off (-D -1) until "enable" arrives on the control FIFO.
    Without build_ids (-B) perf does not read the whole file again at exit to collect build-ids
    (~1 s per 10 s point here); the report and folded stacks are made on the recording machine,
    whose symbols they use, so only a perf.data kept for elsewhere needs them. options change the
    rest (cpus: the -C list for options.cpus == "experiment")."""
    argv = record_argv(output, freq_hz, event)
    if options.call_graph == "none":
        argv.remove("-g")
    if options.mmap_pages is not None:
        argv += ["-m", str(options.mmap_pages)]
    if options.cpus == "experiment":  # -C and -a are exclusive: the CPU list replaces system-wide
        if not cpus:
            raise ValueError("perf cpus=experiment needs the experiment's CPUs")
        argv.remove("-a")
        argv += ["-C", ",".join(str(c) for c in sorted(cpus))]
    return [*argv, "-k", SAMPLE_CLOCK, "-D", "-1", "--control", f"fifo:{ctl},{ack}", *([] if build_ids else ["-B"])]


def clock_offset_s(host: Host) -> float:
    """The host's wall clock minus this machine's, read once (date +%s.%N), to within half a round
    trip: the window's edges on the host's clock."""
    before = time.time()
    text = host.run(["date", "+%s.%N"], timeout=10).stdout.strip()
    after = time.time()
    try:
        return float(text) - (before + after) / 2
    except ValueError:
        raise HostError(f"{host.name}: date +%s.%N printed {text[:60]!r}, not the time") from None


def time_range_arg(time_range: tuple[float, float]) -> list[str]:
    """perf report/script --time for samples stamped on SAMPLE_CLOCK between the two times."""
    return ["--time", f"{time_range[0]:.6f},{time_range[1]:.6f}"]


class ControlledPerf:
    """A perf command (perf record, perf stat) armed with its events off before the clients start
    (its start-up, ~0.3 s of opening events on every CPU, falls in the warm-up), switched on and
    off at the window's edges through its control FIFO (one round trip each: the window opens and
    closes on time), and ended by stop() after every other probe has closed (its slow part: perf
    record's report). Subclasses give argv(ctl, ack) and finish(host) -> files."""

    name = "perf"
    tool = "perf"
    data_dir: str | None = None
    keep_dir = False
    pids: list[int] = []  # processes this probe started: not foreign load

    def __init__(self):
        self._proc = None
        self._enabled: tuple[float, float] | None = None

    def argv(self, ctl: str, ack: str) -> list[str]:
        raise NotImplementedError

    def finish(self, host: Host) -> dict[str, str]:
        raise NotImplementedError

    def arm(self, host: Host) -> None:
        self._dir = make_temp_dir(host, "perf", self.data_dir)
        self._ctl, self._ack = f"{self._dir}/ctl.fifo", f"{self._dir}/ack.fifo"
        host.run(["mkfifo", "-m", "600", self._ctl, self._ack])
        self._proc = host.start(self.argv(self._ctl, self._ack))
        self.pids = [self._proc.pid]

    def _control(self, host: Host, command: str) -> float:
        """Send a command, wait for perf's ack; returns when it was acknowledged (time.time())."""
        if self._proc.poll() is not None:
            raise HostError(f"{host.name}: {self.tool} exited before '{command}': "
                            f"{self._proc.stderr().strip()[-300:]}")
        res = host.run(["sh", "-c", CONTROL_SH, "sh", command, self._ctl, self._ack], check=False,
                       timeout=CONTROL_TIMEOUT_S)
        if res.stdout.strip() != "ack":
            raise HostError(f"{host.name}: {self.tool} did not acknowledge '{command}' "
                            f"(rc {res.returncode}): {(res.stderr or self._proc.stderr()).strip()[-300:]}")
        return time.time()

    def start(self, host: Host) -> None:
        if self._proc is None:
            self.arm(host)
        self._enabled = (self._control(host, "enable"), float("nan"))

    def close(self, host: Host) -> None:
        """Events off: the window's end for this probe (the slow part, stop(), comes after)."""
        if self._enabled is not None and self._enabled[1] != self._enabled[1]:
            self._enabled = (self._enabled[0], self._control(host, "disable"))

    def enabled_s(self) -> float:
        return self._enabled[1] - self._enabled[0]

    def stop(self, host: Host) -> dict[str, str]:
        try:
            self.close(host)
            self._proc.stop(signal.SIGINT, grace=30)
            return self.finish(host)
        finally:
            self.abort(host)

    def abort(self, host: Host) -> None:
        """perf stopped and its files removed, whatever state the probe is in (a failed point)."""
        if self._proc is None:
            return
        try:
            if self._proc.poll() is None:
                self._proc.stop(signal.SIGINT, grace=5)
        finally:
            self._proc.close()
            self._proc = None
            if not self.keep_dir:
                host.run(["rm", "-rf", "--", self._dir], check=False)


class PerfProbe(ControlledPerf):
    """perf record -a -g over the window (ControlledPerf), its report and folded stacks made at stop."""

    name, tool = "perf", "perf record"

    def __init__(self, freq_hz: int = DEFAULT_FREQ_HZ, event: str = "cpu-clock", keep_data: bool = False,
                 options: PerfOptions = PerfOptions(), cpus: list[int] | None = None):
        super().__init__()
        if not 1 <= int(freq_hz) <= 10000:
            raise ValueError(f"perf frequency {freq_hz} Hz is out of 1..10000")
        self.freq_hz, self.event, self.keep_data = int(freq_hz), event, keep_data
        self.options, self.cpus = options, cpus
        self.data_dir, self.keep_dir = options.data_dir, keep_data

    def argv(self, ctl: str, ack: str) -> list[str]:
        self._data = f"{self._dir}/perf.data"
        return controlled_record_argv(self._data, ctl, ack, self.freq_hz, self.event, build_ids=self.keep_data,
                                      options=self.options, cpus=self.cpus)

    def arm(self, host: Host) -> None:
        super().arm(host)
        self._led, self._window, self._offset = None, None, clock_offset_s(host)

    def lead(self, host: Host) -> None:
        """Events on ahead of the window (LEAD_S before it opens): start() then only marks the window."""
        self._enabled = (self._control(host, "enable"), float("nan"))
        self._led = self._enabled[0]

    def start(self, host: Host) -> None:
        if self._proc is not None and self._led is not None:
            return
        super().start(host)

    def bound(self, start: float, end: float) -> None:
        """The measurement window (this machine's clock): the samples the report and stacks keep."""
        self._window = (start, end)

    def finish(self, host: Host) -> dict[str, str]:
        if self._window is None:  # driven without a window (start/stop alone): every sample kept
            return self._files(host, None, self.enabled_s(), "")
        start, end = self._window
        cut = (start + self._offset, end + self._offset)
        lead = f"{start - self._led:.6f}" if self._led is not None else "0"
        window = (f"lead_s {lead}\nclock_offset_s {self._offset:.6f}\nclock {SAMPLE_CLOCK}\n"
                  f"time {cut[0]:.6f},{cut[1]:.6f}\n")
        return self._files(host, cut, end - start, window)

    def _files(self, host: Host, cut, span_s: float, window: str) -> dict[str, str]:
        files = {**report_files(host, self._data, cut), "perf_record.stderr.txt": self._proc.stderr(),
                 "perf_enabled_s.txt": f"{span_s:.6f}\n", **({"perf_window.txt": window} if window else {})}
        if self.keep_data:
            files["perf.data.path"] = self._data
        return files


SCRIPT_ARGS = ["script", "-F", "comm,tid,cpu,event,ip,sym"]


def report_files(host: Host, data: str, time_range: tuple[float, float] | None = None) -> dict[str, str]:
    """perf.data -> the report and folded stacks a run keeps (bench/ times this same path);
    time_range: only the samples stamped inside it (time_range_arg).

    perf report runs in the background (its output goes to a file) while perf script's output
    streams through the folding: on two cores the three overlap, and no stage holds perf script's
    output (~530 bytes per sample) in memory. The files are the same as those of
    `report_files_sequential`, the earlier path, which tests compare against."""
    cut = time_range_arg(time_range) if time_range else []
    report = host.start(["perf", *PERF_REPORT_ARGS, *cut, "-i", data])
    try:
        # folded stacks: a few hundred KB instead of the script's megabytes, enough to
        # re-classify, re-attribute or draw a flame graph later
        script = ["perf", *SCRIPT_ARGS, *cut, "-i", data]
        try:
            folded = {"perf_folded.txt": write_folded(host.stream(script, fold_chunks, check=False, timeout=300)[1])}
        except ParseError:  # the leaf breakdown stands without the stacks; say why, naming the line
            folded = _folded_line_by_line(host, script)
        report.wait(timeout=300)
        return {"perf_report.txt": report.stdout(), "perf_report.stderr.txt": report.stderr(),
                **header_file(host, data), **folded}
    finally:
        report.close()


class PerfOnHost:
    """perf on a host, for a perf.data a researcher brings (`hostnet breakdown FILE`): what
    analysis.profile_files.read_profile asks of perf, so that analysis itself runs no command."""

    def __init__(self, host: Host):
        self.host = host

    def installed(self) -> bool:
        return self.host.which("perf") is not None

    def report_files(self, data: str) -> dict[str, str]:
        return report_files(self.host, data)

    def script(self, data: str) -> tuple[int, str, str]:
        """perf script's default text of the file: (exit status, stdout, stderr)."""
        done = self.host.run(["perf", "script", "-i", data], check=False, timeout=300)
        return done.returncode, done.stdout, done.stderr


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
