"""perf script parsing and folding (hostnet.parsers.perf_script) on captured output
(tests/fixtures/, see its README).

The streamed path gives exactly what line-by-line folding gave: old path, perf script held whole,
split into lines, parsed and folded line by line (`fold(parse_perf_script(text.splitlines()))`);
new path, perf script streamed in chunks through `fold_chunks`. (The report files of both
pipelines are compared in tests/unit/probes/test_perf.py.)
"""
import gzip

import pytest

from conftest import FIXTURES, fixture_text
from hostnet.parsers import ParseError
from hostnet.parsers.perf_script import (count_blocks, fold, fold_chunks, fold_text_lines, parse_folded,
                                         parse_perf_script, sample_blocks, write_folded)


def samples():
    return list(parse_perf_script(fixture_text("perf_script_all-opts.txt").splitlines()))


def test_parse_captured_perf_script():
    s = samples()
    assert len(s) == 400
    assert {x.cpu for x in s} == {0, 1}
    first = s[0]
    assert first.comm == "iperf3" and first.frames[0] == "handle_softirqs"
    assert any(f.endswith("_[u]") for x in s for f in x.frames)  # user frames are marked
    assert all(not f.startswith("0x") for x in s for f in x.frames if not f.endswith("_[u]"))


def test_fold_round_trip():
    s = samples()
    folded = fold(s)
    assert sum(folded.values()) == 400
    back = list(parse_folded(write_folded(folded)))
    assert sum(n for _, n in back) == 400
    assert fold(smp for smp, n in back for _ in range(n)) == folded


def test_task_less_samples_parse():
    [s] = parse_perf_script([":-1    -1 [001] cpu-clock: ", "\tffffffff81000000 handle_softirqs", ""])
    assert s.comm == ":-1" and s.cpu == 1 and s.frames == ("handle_softirqs",)


def test_malformed_input_names_the_line():
    with pytest.raises(ParseError, match=":1"):
        list(parse_perf_script(["\tffffffff81000000 orphan_frame"]))
    with pytest.raises(ParseError, match=":3"):
        list(parse_perf_script(["iperf3 1 [000] cpu-clock:", "\tffffffff81000000 a", "garbage header"]))
    with pytest.raises(ParseError, match=":1"):
        list(parse_folded("no-cpu;comm;frame 3\n"))


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


def test_a_frame_with_text_after_the_symbol_is_refused_naming_the_line():
    """`perf script -F ...,sym,symoff,dso` frames: taken whole as symbol names, a capture came out
    65 % unclassified."""
    lines = ["iperf3 1 [000] cpu-clock:", "\tffffffff81000000 tcp_sendmsg+0x31 ([kernel.kallsyms])"]
    with pytest.raises(ParseError, match=r"s:2: text after the symbol"):
        list(parse_perf_script(lines, "s"))
    lines[1] = "\t    7f1234567890 __libc_send (/usr/lib/x86_64-linux-gnu/libc.so.6)"
    with pytest.raises(ParseError, match=r"s:2: text after the symbol"):
        list(parse_perf_script(lines, "s"))
    lines[1] = "\t    7f1234567890 std::vector<int>::push_back(int const&)"  # C++ names keep their parentheses
    assert next(parse_perf_script(lines, "s")).frames == ("std::vector<int>::push_back(int const&)_[u]",)


def test_a_frame_with_an_address_and_no_symbol_says_so():
    with pytest.raises(ParseError, match=r"s:2: an address without a symbol") as err:
        list(parse_perf_script(["iperf3 1 [000] cpu-clock:", "\tffffffff81000000"], "s"))
    assert "outside a sample" not in str(err.value)


def test_empty_script_and_folded_text_raise():
    with pytest.raises(ParseError, match="no samples"):
        fold_chunks([b""])
    with pytest.raises(ParseError, match="no samples"):
        fold_text_lines([b"\n\n"])
    with pytest.raises(ParseError, match="f.txt: empty"):
        list(parse_folded("", "f.txt"))
    with pytest.raises(ParseError, match="f.txt:1: the last line has no newline"):
        list(parse_folded("0;iperf3;tcp_sendmsg 1", "f.txt"))  # "... 12" cut inside its count
    with pytest.raises(ParseError, match="f.txt:1: not a folded stack line"):
        list(parse_folded("0;iperf3;tcp_sendmsg 0\n", "f.txt"))
