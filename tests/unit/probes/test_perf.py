"""report_files (hostnet.probes.perf: perf report in the background, perf script streamed through
fold_chunks) gives exactly the files of report_files_sequential (the earlier pipeline), and so
every number downstream, on captured perf output replayed through the real LocalHost code.
The same on a fresh recording: tests/live/test_live_perf.py."""
import gzip

import pytest

from conftest import FIXTURES
from hostnet.analysis.metrics import breakdown
from hostnet.analysis.attribution import breakdown_from_stacks
from hostnet.hosts import LocalHost
from hostnet.parsers.perf_report import parse_perf_report
from hostnet.parsers.perf_script import parse_folded
from hostnet.probes.perf import report_files, report_files_sequential
from hostnet.taxonomy import load

TAX = load("linux-6")


# (perf script output, perf report output of the same perf.data)
CAPTURES = [("perf_script_all-opts.txt", None), ("perf_script_all-opts-3s.txt.gz", "perf_report_all-opts-3s.txt")]


def captured(name: str) -> bytes:
    data = (FIXTURES / name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


class ReplayHost(LocalHost):
    """Runs the real LocalHost code, with perf's commands answered by captured output (cat)."""

    def __init__(self, tmp_path, report: str, script: bytes):
        super().__init__("replay")
        (tmp_path / "script.txt").write_bytes(script)
        self.answers = {"report": str(FIXTURES / report), "script": str(tmp_path / "script.txt"),
                        "header": str(FIXTURES / "perf_header_1s.txt")}

    def full_argv(self, argv):
        argv = list(argv)
        if argv[0] != "perf":
            return super().full_argv(argv)
        return ["cat", self.answers["header" if "--header-only" in argv else argv[1]]]


@pytest.mark.parametrize("script, report", [c for c in CAPTURES if c[1]])
def test_report_files_equal_the_sequential_path_on_captured_output(tmp_path, script, report):
    host = ReplayHost(tmp_path, report, captured(script))
    new, old = report_files(host, "perf.data"), report_files_sequential(host, "perf.data")
    assert new == old
    assert set(new) == {"perf_report.txt", "perf_report.stderr.txt", "perf_header.txt", "perf_folded.txt"}
    assert "time of first sample" in new["perf_header.txt"]
    # and so every number downstream: leaf breakdown per CPU and the attributed one
    rows = parse_perf_report(new["perf_report.txt"])
    stacks = list(parse_folded(new["perf_folded.txt"]))
    for cpu in (0, 1):
        assert breakdown(rows, {cpu}, TAX, ["iperf3"])["busy_samples"] > 0
        att = breakdown_from_stacks([s for s in stacks if s[0].cpu == cpu], {cpu}, TAX, ["iperf3"])
        assert att == breakdown_from_stacks([s for s in parse_folded(old["perf_folded.txt"]) if s[0].cpu == cpu],
                                            {cpu}, TAX, ["iperf3"])


def test_report_files_keep_the_error_file_for_bad_script_output(tmp_path):
    host = ReplayHost(tmp_path, CAPTURES[1][1], b"garbage header\n")
    new, old = report_files(host, "perf.data"), report_files_sequential(host, "perf.data")
    assert new == old and new["perf_folded.error.txt"].startswith("perf script:1: not a sample header")


def test_samples_are_cut_to_the_window_by_their_time_stamps(tmp_path):
    """Given the window, perf report and perf script keep only samples stamped inside it (--time on
    perf's wall-clock stamps, -k CLOCK_REALTIME); the header (its whole span) is read as before."""
    from hostnet.probes.perf import SAMPLE_CLOCK, controlled_record_argv
    seen = []

    class Recording(ReplayHost):
        def full_argv(self, argv):
            seen.append(list(argv))
            return super().full_argv(argv)

    host = Recording(tmp_path, CAPTURES[1][1], captured(CAPTURES[1][0]))
    report_files(host, "perf.data", (1795831640.25, 1795831644.75))
    perf = [a for a in seen if a[0] == "perf"]
    cut = ["--time", "1795831640.250000,1795831644.750000"]
    for argv in perf:
        has_cut = any(argv[i:i + 2] == cut for i in range(len(argv)))
        assert has_cut == ("--header-only" not in argv), argv
    assert {a[1] for a in perf} == {"report", "script"}
    record = controlled_record_argv("/t/perf.data", "/t/ctl", "/t/ack")
    assert record[record.index("-k") + 1] == SAMPLE_CLOCK == "CLOCK_REALTIME"
