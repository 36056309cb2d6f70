import pytest

from conftest import fixture_text
from hostnet.parsers import ParseError
from hostnet.parsers.rpc import parse_netperf, parse_sockperf


def test_netperf_tcp_rr_captured():
    r = parse_netperf(fixture_text("netperf_tcp_rr_4k.txt"))
    assert r.transactions_per_s == pytest.approx(17350.81)
    assert (r.mean_usec, r.p50_usec, r.p90_usec, r.p99_usec) == (57.54, 54, 74, 118)
    assert r.request_bytes == r.response_bytes == 4096 and r.latency_kind == "transaction"


def test_netperf_error_output():
    with pytest.raises(ParseError, match="netperf error: establish control"):
        parse_netperf(fixture_text("netperf_refused.txt"))
    with pytest.raises(ParseError, match="empty"):
        parse_netperf("")
    with pytest.raises(ParseError, match="Trans/s"):
        parse_netperf("9000.1,10^6bits/s,1,1,1,1,4096,4096\n")


def test_sockperf_ping_pong_captured():
    r = parse_sockperf(fixture_text("sockperf_pp_4k.txt"), 4096)
    assert r.transactions_per_s == pytest.approx(28050 / 1.550)
    assert r.mean_usec == pytest.approx(55.242)
    assert (r.p50_usec, r.p90_usec, r.p99_usec) == (56.503, 70.914, 87.799)
    assert r.latency_kind == "round trip"


def test_sockperf_errors_although_it_exits_zero():
    with pytest.raises(ParseError, match="Connection refused"):
        parse_sockperf(fixture_text("sockperf_refused.txt"), 4096)
    with pytest.raises(ParseError, match="Valid Duration"):
        parse_sockperf("sockperf: Starting test...\n", 4096)
