"""The root qdisc knob (hostnet.knobs.qdisc): captured `tc -j qdisc` read back, pfifo set with
replace, anything else put back by deleting hostnet's qdisc."""
import pytest

from conftest import FakeHost, fixture_text
from hostnet.knobs import KnobError, RootQdisc
from hostnet.knobs.qdisc import parse_root_qdisc


def test_parse_captured_qdiscs():
    assert parse_root_qdisc(fixture_text("tc_j_qdisc_pfifo.json"), "v") == "pfifo limit 1000"
    assert parse_root_qdisc(fixture_text("tc_j_qdisc_noqueue.json"), "v") == "noqueue"
    with pytest.raises(KnobError, match="no root qdisc"):
        parse_root_qdisc("[]", "v")


def _tc_host():
    state = {"q": fixture_text("tc_j_qdisc_noqueue.json")}

    def tc(argv, h):
        if "replace" in argv:
            state["q"] = fixture_text("tc_j_qdisc_pfifo.json")
        elif "del" in argv:
            state["q"] = fixture_text("tc_j_qdisc_noqueue.json")
        return 0, state["q"] if "show" in argv else "", ""
    return FakeHost(handlers={"tc": tc})


def test_set_and_put_back():
    host = _tc_host()
    RootQdisc().write(host, "hxs", "pfifo limit 1000")
    assert ["tc", "qdisc", "replace", "dev", "hxs", "root", "pfifo", "limit", "1000"] in host.commands
    RootQdisc().write(host, "hxs", "noqueue")
    assert ["tc", "qdisc", "del", "dev", "hxs", "root"] in host.commands
    n = len(host.commands)
    RootQdisc().write(host, "hxs", "noqueue")  # already so: nothing deleted
    assert not any("del" in a for a in host.commands[n:])


def test_values_validated():
    for bad in ("pfifo limit x", "netem delay 1ms", "noqueue; reboot"):
        with pytest.raises(KnobError):
            RootQdisc().validate("hxs", bad)
