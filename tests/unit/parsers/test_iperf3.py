"""iperf3's JSON (hostnet.parsers.iperf3) on captured output, its error JSON, and bad input."""
import pytest

from conftest import fixture_text
from hostnet.parsers import ParseError
from hostnet.parsers.iperf3 import parse_iperf3


def test_iperf3_success_captured_all_opts():
    r = parse_iperf3(fixture_text("iperf3_all-opts.json"))
    assert 1 < r.received_bps / 1e9 < 200
    assert r.sent_bps == pytest.approx(r.received_bps, rel=0.05)
    assert r.congestion_control == "cubic"
    assert r.seconds == pytest.approx(3, abs=0.2)
    assert r.retransmits is not None and r.retransmits >= 0


def test_iperf3_no_opts_has_retransmits_field():
    r = parse_iperf3(fixture_text("iperf3_no-opts.json"))
    assert r.retransmits > 0  # veth's two-backlog reordering without RPS on the sender side


def test_iperf3_error_json_raises_with_tool_message():
    # iperf3 3.12 exits 0 here: the error is only in the JSON.
    with pytest.raises(ParseError, match="Connection refused"):
        parse_iperf3(fixture_text("iperf3_refused.json"))


@pytest.mark.parametrize("text,msg", [("", "empty"), ("{not json", "not JSON"), ('{"end": {}}', "missing")])
def test_iperf3_bad_input(text, msg):
    with pytest.raises(ParseError, match=msg):
        parse_iperf3(text, "x.json")
