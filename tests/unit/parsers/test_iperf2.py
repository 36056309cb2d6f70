"""iperf2's UDP client and server reports (hostnet.parsers.iperf2) on captured output."""
import pytest

from conftest import fixture_text
from hostnet.parsers import ParseError
from hostnet.parsers.iperf2 import parse_iperf2_udp


def test_server_report_gives_loss_and_granted_buffer():
    r = parse_iperf2_udp(fixture_text("iperf2_udp_server_1M.txt"))
    assert r.buffer_bytes == 2 * 1024 * 1024  # Linux doubles the 1 MB asked for
    assert (r.server.lost, r.server.total) == (15916, 342106)
    assert r.server.loss_pct == pytest.approx(4.652, abs=1e-3)
    assert r.server.bps == 1.28e9 and r.datagrams_sent is None


def test_client_report_separates_sent_from_the_server_report():
    r = parse_iperf2_udp(fixture_text("iperf2_udp_client_2g.txt"))
    assert r.datagrams_sent == 342107
    assert r.local.bps == 1.34e9 and r.local.lost is None
    assert r.server.bps == 1.28e9 and r.server.lost == 15916
    r8 = parse_iperf2_udp(fixture_text("iperf2_udp_client_8g.txt"))
    assert r8.local.bps == 677e6 and r8.server.loss_pct == 0.0


def test_iperf_2_0_report_lines_pad_the_end_time():
    text = ("[  3] local 198.18.0.2 port 15002 connected with 198.18.0.1 port 40000\n"
            "[  3]  0.0- 3.0 sec   457 MBytes  1.28 Gbits/sec   0.001 ms 15916/342106 (4.7%)\n")
    r = parse_iperf2_udp(text)
    assert r.server.seconds == 3.0 and (r.server.lost, r.server.total) == (15916, 342106)


def test_client_without_server_report_and_empty_output():
    r = parse_iperf2_udp(fixture_text("iperf2_udp_client_noserver.txt"))
    assert r.server is None and r.datagrams_sent == 26229
    assert r.local.bytes == pytest.approx(36.8 * 2**20)
    with pytest.raises(ParseError, match="empty"):
        parse_iperf2_udp("")
    with pytest.raises(ParseError, match="no iperf2 report"):
        parse_iperf2_udp("connect failed: Connection refused\n")
