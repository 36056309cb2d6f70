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


SERVER_LINE = "0.001 ms 15916/342106 (4.7%)"


def test_a_server_line_cut_inside_a_number_is_refused():
    """Cut inside the total ("15916/34"), the line once gave 46,812 % loss."""
    text = fixture_text("iperf2_udp_server_1M.txt")
    with pytest.raises(ParseError, match=r"iperf_server.txt:7: damaged report line"):
        parse_iperf2_udp(text[:text.index("342106") + 2], "iperf_server.txt")


@pytest.mark.parametrize("damaged, match", [
    ("0.001 ms 15916/34210 (4.7%)", r"15916/34210 is 46.5 %, not the 4.7 % printed"),
    ("0.001 ms 15916/342106 (47%)", r"15916/342106 is 4.65 %, not the 47 % printed"),
    ("0.001 ms 400/300 (1.3e+02%)", r"400/300 datagrams lost is not a loss count"),
    ("0.001 ms -5/342106 (0%)", r"-5/342106 datagrams lost is not a loss count"),
])
def test_loss_must_be_a_count_out_of_the_total_and_match_its_printed_share(damaged, match):
    text = fixture_text("iperf2_udp_server_1M.txt").replace(SERVER_LINE, damaged)
    with pytest.raises(ParseError, match=":7: " + match):
        parse_iperf2_udp(text)


@pytest.mark.parametrize("old, new, match", [
    ("457 MBytes", "417 MBytes", "1.28 Gbits/sec is not 417 MBytes over 3.001 s"),
    ("0.0000-3.0006", "0.0000-0.0000", "is not a result"),
    ("1.28 Gbits/sec", "0.00 bits/sec", "is not a result"),
])
def test_rates_and_durations_are_positive_and_agree(old, new, match):
    with pytest.raises(ParseError, match=match):
        parse_iperf2_udp(fixture_text("iperf2_udp_server_1M.txt").replace(old, new))


def test_a_client_output_cut_before_its_sent_line_or_its_server_loss_is_refused():
    text = fixture_text("iperf2_udp_client_2g.txt")
    with pytest.raises(ParseError, match="without its 'Sent N datagrams' line"):
        parse_iperf2_udp(text[:text.index("[  1] Sent")])
    with pytest.raises(ParseError, match=":12: a server report without its lost/total"):
        parse_iperf2_udp(text[:text.index("   0.000 ms 15916")] + "\n")


def test_iperf_2_1_enhanced_reports_read_as_the_plain_ones():
    """`iperf -e` (iperf 2.1.8, Debian 12's) adds Write/Err and PPS to the client's line, latency,
    PPS, Rx/inP and NetPwr to the receiver's: they were refused as damaged report lines."""
    client = parse_iperf2_udp(fixture_text("iperf2_udp_client_e.txt"))
    assert client.datagrams_sent == 89166 and client.local.bytes == 125 * 2**20 and client.local.bps == 524e6
    assert (client.server.lost, client.server.total, client.server.jitter_ms) == (0, 89165, 0.0)
    server = parse_iperf2_udp(fixture_text("iperf2_udp_server_e.txt"))
    local = server.local
    assert (local.lost, local.total, local.jitter_ms, local.seconds) == (0, 89165, 0.001, 2.0)
    # the enhanced columns are read past, not trusted blindly: a cut one is still a damaged line
    cut = fixture_text("iperf2_udp_server_e.txt").replace("44583 pps 89165/0(0) pkts 48402223", "44583 p")
    with pytest.raises(ParseError):
        parse_iperf2_udp(cut)
