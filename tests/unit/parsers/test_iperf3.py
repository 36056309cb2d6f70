"""iperf3's JSON (hostnet.parsers.iperf3) on captured output, its error JSON, and bad input."""
import json

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


def _edited(edit) -> str:
    """The captured all-opts JSON with one edit applied to the parsed document."""
    doc = json.loads(fixture_text("iperf3_all-opts.json"))
    edit(doc)
    return json.dumps(doc)


@pytest.mark.parametrize("text", ["[]", "null", "3", '"end"'])
def test_iperf3_json_that_is_not_an_object_raises(text):
    with pytest.raises(ParseError, match="x.json: expected a JSON object"):
        parse_iperf3(text, "x.json")


@pytest.mark.parametrize("field, value, match", [
    ("retransmits", "lots", "end.sum_sent.retransmits: not a number: 'lots'"),
    ("retransmits", 2.5, "end.sum_sent.retransmits: not a whole number"),
    ("retransmits", True, "end.sum_sent.retransmits: not a number"),
    ("bits_per_second", "1e10", "end.sum_sent.bits_per_second: not a number"),
    ("bits_per_second", None, "end.sum_sent.bits_per_second: missing"),
])
def test_iperf3_field_of_the_wrong_type_raises(field, value, match):
    with pytest.raises(ParseError, match=match):
        parse_iperf3(_edited(lambda d: d["end"]["sum_sent"].update({field: value})))


def test_iperf3_zero_rate_without_an_error_is_not_a_result():
    def nothing_moved(doc):
        for s in ("sum_sent", "sum_received"):
            doc["end"][s].update(bytes=0, bits_per_second=0)
    with pytest.raises(ParseError, match="0 bit/s without an error"):
        parse_iperf3(_edited(nothing_moved))


def test_iperf3_rate_must_be_its_bytes_over_its_seconds():
    """A damaged digit in bytes or bits_per_second shows: the two disagree."""
    with pytest.raises(ParseError, match="end.sum_received: bits_per_second .* is not bytes"):
        parse_iperf3(_edited(lambda d: d["end"]["sum_received"].update(bytes=d["end"]["sum_received"]["bytes"] // 10)))
    with pytest.raises(ParseError, match=r"intervals\[1\].sum: missing"):
        parse_iperf3(_edited(lambda d: d["intervals"][1].pop("sum")))
    with pytest.raises(ParseError, match=r"intervals\[0\]: expected an object"):
        parse_iperf3(_edited(lambda d: d["intervals"].__setitem__(0, [])))
