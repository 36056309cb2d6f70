"""The streamed perf pipeline gives exactly the files and numbers of the earlier one.

Old path: perf report, then perf script held whole, split into lines, parsed and folded line by
line (`report_files_sequential`, `fold(parse_perf_script(text.splitlines()))`). New path: perf
report in the background, perf script streamed in chunks through `fold_chunks`
(`report_files`). Both run here on real captured perf output (tests/fixtures/, see its README).
"""
import gzip
import shutil
import subprocess

import pytest

from conftest import FIXTURES
from hostnet.attribution import breakdown_from_stacks
from hostnet.hosts import LocalHost
from hostnet.parsers import ParseError
from hostnet.parsers.perf_report import parse_perf_report
from hostnet.parsers.perf_script import (count_blocks, fold, fold_chunks, fold_text_lines, parse_folded,
                                         parse_perf_script, sample_blocks, write_folded)
from hostnet.analysis import breakdown
from hostnet.probes.perf import report_files, report_files_sequential
from hostnet.taxonomy import load

TAX = load("linux-6")
# (perf script output, perf report output of the same perf.data)
CAPTURES = [("perf_script_all-opts.txt", None), ("perf_script_all-opts-3s.txt.gz", "perf_report_all-opts-3s.txt")]


def captured(name: str) -> bytes:
    data = (FIXTURES / name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


def chunked(data: bytes, size: int):
    return [data[i:i + size] for i in range(0, len(data), size)]


def old_fold(data: bytes):
    """What report_files did before: subprocess text mode (universal newlines), splitlines()."""
    text = data.decode().replace("\r\n", "\n").replace("\r", "\n")
    return fold(parse_perf_script(text.splitlines(), "perf script"))


@pytest.mark.parametrize("script", [c[0] for c in CAPTURES])
@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 22])
def test_fold_chunks_equals_line_by_line_folding(script, chunk):
    data = captured(script)
    old = old_fold(data)
    if chunk == 1 and len(data) > 10**6:
        chunk = 997  # byte by byte would take minutes; odd sizes cut samples anywhere
    new = fold_chunks(chunked(data, chunk))
    assert new == old and write_folded(new) == write_folded(old)
    assert fold_text_lines(chunked(data, chunk)) == old


def test_the_big_capture_dedups_and_keeps_every_sample():
    data = captured(CAPTURES[1][0])
    blocks = count_blocks([data])
    samples = sum(1 for _ in parse_perf_script(data.decode().splitlines()))
    assert sum(n for b, n in blocks.items() if b.strip()) == samples > 3000
    assert len(blocks) < samples / 2  # canonical addresses make repeated samples identical


@pytest.mark.parametrize("edit", [
    lambda d: d.replace(b"\n\n", b"\n\n\n") + b"\n\n\n",        # runs of empty lines
    lambda d: b"\n" + d.rstrip(b"\n"),                               # no final empty line
    lambda d: d.replace(b"\n", b"\r\n"),                             # CRLF
    lambda d: d.replace(b"\n\n", b"\n \n", 3),                       # a blank line of spaces
])
def test_fold_chunks_equals_line_by_line_folding_on_odd_layouts(edit):
    data = edit(b"\n\n".join(captured(CAPTURES[0][0]).split(b"\n\n")[:12]) + b"\n\n")
    for size in range(1, 300, 7):
        assert fold_chunks(chunked(data, size)) == old_fold(data)


@pytest.mark.parametrize("memo_limit", [0, 3, 1 << 16])
def test_the_memo_of_raw_blocks_changes_nothing(memo_limit):
    chunks = chunked(captured(CAPTURES[1][0]), 1 << 14)
    assert count_blocks(chunks, memo_limit) == count_blocks(chunks, 0)


def test_sample_blocks_cut_only_at_empty_lines():
    data = b"a 1 [000] cpu-clock:\n\tffffffff81000000 x\n\nb 2 [001] cpu-clock:\n\t 7f00 y\n"
    for size in range(1, len(data) + 1):
        assert b"\n\n".join(sample_blocks(chunked(data, size))) == data.rstrip(b"\n")


@pytest.mark.parametrize("frame, kernel", [
    ("\tffffffff81000000 tcp_sendmsg", True),
    ("\tffff800000000000 lowest_kernel", True),
    ("\tffff7fffffffffff not_kernel", False),     # 16 digits below the kernel half: left as is
    ("\t    7f1234567890 __libc_send", False),
    ("\t               0 [unknown]", False),
    ("\t 0000ffffffff81000000 zero_padded", True),
    ("\tffffffff81000000 sym+0x1f", True),        # offsets (symoff) are still stripped
])
def test_canonical_addresses_keep_kernel_or_user(frame, kernel):
    block = f"iperf3 1 [000] cpu-clock:\n{frame}\n".encode()
    [s] = [s for s, n in _parsed(block)]
    [ref] = list(parse_perf_script(block.decode().splitlines()))
    assert s == ref and s.frames[0].endswith("_[u]") is not kernel


def _parsed(block):
    for b, n in count_blocks([block]).items():
        for s in parse_perf_script(b.decode().splitlines()):
            yield s, n


def test_bad_input_gives_the_same_error_line_by_line():
    data = captured(CAPTURES[0][0]) + b"\n\tffffffff81000000 orphan_frame\n"
    with pytest.raises(ParseError) as old:
        old_fold(data)
    with pytest.raises(ParseError):
        fold_chunks(chunked(data, 4096))
    with pytest.raises(ParseError) as new:
        fold_text_lines(chunked(data, 4096))
    assert str(new.value) == str(old.value)


class ReplayHost(LocalHost):
    """Runs the real LocalHost code, with perf's commands answered by captured output (cat)."""

    def __init__(self, tmp_path, report: str, script: bytes):
        super().__init__("replay")
        (tmp_path / "script.txt").write_bytes(script)
        self.answers = {"report": str(FIXTURES / report), "script": str(tmp_path / "script.txt")}

    def _full(self, argv):
        argv = list(argv)
        return ["cat", self.answers[argv[1]]] if argv[0] == "perf" else super()._full(argv)


@pytest.mark.parametrize("script, report", [c for c in CAPTURES if c[1]])
def test_report_files_equal_the_sequential_path_on_captured_output(tmp_path, script, report):
    host = ReplayHost(tmp_path, report, captured(script))
    new, old = report_files(host, "perf.data"), report_files_sequential(host, "perf.data")
    assert new == old
    assert set(new) == {"perf_report.txt", "perf_report.stderr.txt", "perf_folded.txt"}
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


def _mask_tip(files):
    # perf report ends with a random "# (Tip: ...)" line: the one part that differs run to run
    return {k: "\n".join(line for line in v.splitlines() if not line.startswith("# (Tip:")) for k, v in files.items()}


@pytest.mark.live
@pytest.mark.skipif(not shutil.which("perf") or subprocess.run(["id", "-u"], capture_output=True, text=True)
                    .stdout.strip() != "0", reason="needs perf and root")
def test_report_files_equal_the_sequential_path_on_a_fresh_recording(tmp_path):
    data = str(tmp_path / "perf.data")
    LocalHost().run(["perf", "record", "-a", "-g", "-e", "cpu-clock", "-F", "999", "-o", data, "--quiet",
                     "--", "sleep", "1"], timeout=60)
    new, old = report_files(LocalHost(), data), report_files_sequential(LocalHost(), data)
    assert _mask_tip(new) == _mask_tip(old) and new["perf_folded.txt"]
