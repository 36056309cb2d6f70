"""PerfProbe's window through perf record's control FIFO (hostnet.probes.perf): the argv it
builds, and its clear errors when perf died or does not answer. These run the real LocalHost
code with perf replaced by a stand-in; a real perf's window is tests/live/test_live_perf.py."""
import sys

import pytest

from hostnet.hosts import HostError, LocalHost
from hostnet.probes import perf as perf_probe
from hostnet.probes.perf import PerfProbe, controlled_record_argv


def test_perf_is_armed_with_its_events_off_and_without_build_ids_unless_the_data_is_kept():
    argv = controlled_record_argv("/t/perf.data", "/t/ctl", "/t/ack", 999)
    assert argv[:2] == ["perf", "record"] and ["-D", "-1"] == argv[argv.index("-D"):argv.index("-D") + 2]
    assert argv[argv.index("--control") + 1] == "fifo:/t/ctl,/t/ack" and "-B" in argv
    # a perf.data kept for another machine needs its build-ids
    assert "-B" not in controlled_record_argv("/t/perf.data", "/t/ctl", "/t/ack", 999, build_ids=True)


class StandInHost(LocalHost):
    """LocalHost whose perf is a stand-in command (the rest, mktemp, mkfifo and sh, are real)."""

    def __init__(self, perf_argv):
        super().__init__("standin")
        self.perf_argv = perf_argv

    def full_argv(self, argv):
        argv = list(argv)
        return super().full_argv(self.perf_argv if argv[0] == "perf" else argv)


def test_a_perf_that_exited_is_named_with_its_error_and_leaves_nothing_behind():
    host = StandInHost(["sh", "-c", "echo 'perf_event_paranoid forbids it' >&2; exit 3"])
    probe = PerfProbe()
    probe.arm(host)
    probe._proc.wait(timeout=10)
    with pytest.raises(HostError, match="perf record exited before 'enable': perf_event_paranoid forbids it"):
        probe.start(host)
    directory = probe._dir
    probe.abort(host)
    assert probe._proc is None and not LocalHost().run(["test", "-e", directory], check=False).ok


def test_a_perf_that_does_not_answer_fails_after_the_timeout(monkeypatch):
    monkeypatch.setattr(perf_probe, "CONTROL_TIMEOUT_S", 0.5)
    # runs, but never opens its control FIFO; ends on SIGINT as perf does (a plain sleep started in
    # the background ignores it, and abort then waited out its 5 s grace)
    host = StandInHost([sys.executable, "-c", "import signal, time\n"
                        "signal.signal(signal.SIGINT, lambda *_: exit(0))\ntime.sleep(30)"])
    probe = PerfProbe()
    probe.arm(host)
    try:
        with pytest.raises(HostError, match="timed out after 0.5 s"):
            probe.start(host)
    finally:
        probe.abort(host)
    assert probe._proc is None
