"""The C tools' output (hostnet.parsers.native): udpbatch, microbench and zcflow, captured, and their errors."""
import pytest

from conftest import fixture_text
from hostnet.parsers import ParseError
from hostnet.parsers.native import parse_microbench, parse_udpbatch, parse_zcflow


def test_udpbatch_output():
    s = parse_udpbatch(fixture_text("udpbatch_send_b32.txt"))
    assert (s.role, s.batch, s.size, s.calls) == ("send", 32, 18, 3064)
    assert s.pps == pytest.approx(97996 * 1e9 / 1301085414)
    assert s.ns_per_packet == pytest.approx(1301085414 / 97996)
    r = parse_udpbatch(fixture_text("udpbatch_recv_b1.txt"))
    assert r.role == "recv" and r.calls == r.packets and r.cpu_ns_per_packet == pytest.approx(180427695 / 99167)


@pytest.mark.parametrize("name, match", [("udpbatch_bad_batch.txt", "found 0.*--batch must be"),
                                         ("udpbatch_recv_no_packet.txt", "no packet within")])
def test_udpbatch_errors_are_named(name, match):
    with pytest.raises(ParseError, match=match):
        parse_udpbatch(fixture_text(name))


def test_udpbatch_rejects_incomplete_line():
    with pytest.raises(ParseError, match="lacks window_ns, cpu_ns"):
        parse_udpbatch("udpbatch role=send batch=1 size=18 packets=5 calls=5 errors=0\n")


def test_microbench_output():
    r = parse_microbench(fixture_text("microbench_skballoc.txt"))
    assert (r.bench, r.iterations, r.ns_per_op) == ("skballoc", 1_200_000, pytest.approx(303.781))
    with pytest.raises(ParseError, match="non-numeric"):
        parse_microbench("microbench bench=atomic iterations=x total_ns=1 ns_per_op=1\n")


def test_a_result_line_cut_inside_its_last_number_is_refused():
    """cpu_ns=280772596 cut to cpu_ns=2807 would still parse: the tools end the line with a newline."""
    text = fixture_text("udpbatch_send_b32.txt")
    with pytest.raises(ParseError, match=r"u.txt:1: the result line has no newline: cut short"):
        parse_udpbatch(text[:text.index("cpu_ns=") + 11], "u.txt")
    with pytest.raises(ParseError, match="no newline"):
        parse_microbench(fixture_text("microbench_skballoc.txt").rstrip("\n"))


@pytest.mark.parametrize("old, new, match", [
    ("packets=97996", "packets=997996", "997996 packets in 3064 calls of at most 32"),
    ("errors=0", "errors=-1", "non-numeric field errors='-1'"),
    ("batch=32", "batch=32 batch=32", "not one key=value per field"),
])
def test_udpbatch_numbers_that_cannot_be_right(old, new, match):
    with pytest.raises(ParseError, match=match):
        parse_udpbatch(fixture_text("udpbatch_send_b32.txt").replace(old, new))


def test_zcflow_sender_zerocopy_counts_completions_and_copies():
    r = parse_zcflow(fixture_text("zcflow_sender_zerocopy.txt"))
    assert (r.role, r.mode, r.zc_sends, r.zc_completed, r.zc_copied) == ("sender", "zerocopy", 11629, 11629, 11629)
    assert r.gbps == pytest.approx(1680867328 * 8 / 1000188694)
    assert r.copied_pct == 100.0 and r.mapped_pct is None  # loopback: the kernel copies every MSG_ZEROCOPY send
    assert r.cpu_us_per_mb == pytest.approx((3705000 + 834035000) / 1e3 / (1680867328 / 2 ** 20))


def test_zcflow_receiver_mmap_reports_what_it_mapped():
    r = parse_zcflow(fixture_text("zcflow_receiver_mmap.txt"))
    assert (r.role, r.mode, r.rcv_mss) == ("receiver", "mmap", 65483)
    assert r.mapped_pct == pytest.approx(100 * 1572495360 / 1677328278) and r.copied_pct is None
    c = parse_zcflow(fixture_text("zcflow_receiver_copy.txt"))
    assert c.mapped is None and c.bytes == 1378028705


@pytest.mark.parametrize("name", ["zcflow_sender_copy.txt", "zcflow_sender_sendfile.txt"])
def test_zcflow_copy_and_sendfile_senders(name):
    r = parse_zcflow(fixture_text(name))
    assert r.role == "sender" and r.zc_sends is None and r.gbps > 0 and r.cpu_us_per_mb > 0


@pytest.mark.parametrize("text, match", [
    (fixture_text("zcflow_refused.txt"), "found 0.*Connection refused"),
    (fixture_text("zcflow_receiver_short.txt"), "window never opened"),
    ("zcflow role=receiver mode=mmap window_ns=5 bytes=1 bytes_total=1 calls=1 user_ns=0 sys_ns=0\n",
     "a mmap result lacks mapped"),
    ("zcflow role=receiver mode=sendfile window_ns=5 bytes=1 bytes_total=1 calls=1 user_ns=0 sys_ns=0\n",
     "mode 'sendfile' is not"),
    ("zcflow role=receiver mode=mmap window_ns=5 bytes=1 bytes_total=1 calls=1 user_ns=0 sys_ns=0 mapped=2 "
     "mapped_total=2\n", "cannot be"),
    ("zcflow role=sender mode=zerocopy window_ns=5 bytes=1 bytes_total=1 calls=1 user_ns=0 sys_ns=0 zc_sends=1 "
     "zc_completed=2 zc_copied=0 zc_notifications=1 enobufs=0\n", "0 copied of 2 completed of 1 sends"),
])
def test_zcflow_errors_are_named(text, match):
    with pytest.raises(ParseError, match=match):
        parse_zcflow(text)
